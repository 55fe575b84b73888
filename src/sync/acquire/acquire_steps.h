// SPDX-License-Identifier: Apache-2.0
// One acquisition's steps on the server, as its kind assembled them: the attempt, and where the
// kind has them the recheck and settle steps after an attempt whose reply was lost, and the
// give-up cleanup. The waiting loop (acquire_loop.h) holds them as one object, so a sleeping
// waiter keeps one record of what it shares with its steps (core, name, owner, lease...) instead
// of a copy in each step's closure (issue 34: a waiter's bytes).
//
// Threading: every step runs on the I/O thread.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "sync/acquire/acquire_fsm.h"

namespace redisync::sync {

class AcquireSteps {
 public:
  using Done = std::function<void(std::exception_ptr, AttemptResult)>;
  using Step = std::function<void(Done)>;

  virtual ~AcquireSteps() = default;

  /// The channel the kind's releases are announced on: the loop sleeps on it. Built when
  /// asked (at the start and at a subscribe), not kept by the loop.
  virtual std::string channel() const = 0;
  /// One try of the kind's acquire step.
  virtual void attempt(Done done) = 0;
  /// Whether recheck() and settle() exist. Without them, errors that may have run on the
  /// server are reported, never retried (the loop cannot find out what they did).
  virtual bool can_recheck() const { return false; }
  virtual bool can_settle() const { return false; }
  /// Run instead of attempt() after an attempt that may have run on the server (timeout,
  /// connection dropped after sending): finds out whether it acquired and, if not, attempts.
  virtual void recheck(Done done) { attempt(std::move(done)); }
  /// Finds out, without attempting, whether such an attempt acquired ({acquired}; an error
  /// when the server cannot tell). Run before the loop gives up after one.
  virtual void settle(Done done) { done(nullptr, {}); }
  /// The kind's cleanup when the acquisition ends without the lock (a fair lock's queue entry).
  virtual void give_up() {}
};

}  // namespace redisync::sync
