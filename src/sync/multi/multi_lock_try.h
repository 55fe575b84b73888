// SPDX-License-Identifier: Apache-2.0
// One walk-and-retry "try lock" of the multi-lock (docs/wire-format.md §6), without the
// Metrics hook: start_multi_try (multi_lock_attempt.h) meters it, start_multi_lock repeats it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

#include "sync/multi/multi_lock_attempt.h"

namespace redisync::detail {

/// The cancellation of one async multi-lock acquisition, as its tries see it. The caller's
/// CancelSignal (sync/acquire/cancel_signal.h) fires on the first member's I/O thread, while
/// the tries run on every member's I/O thread, one after another (start_multi_lock repeats
/// them): this hands the request to the try running now, or to the next one. Any thread.
class MultiCancel {
 public:
  /// A cancellation was requested: from now on every try gives up. Calls the running try's
  /// `on_request` (without the mutex held).
  void request();
  /// A try begins: `on_request` is what request() calls while it runs. Returns true when a
  /// cancellation was requested already (then `on_request` is not kept).
  bool enter(std::function<void()> on_request);

 private:
  std::mutex mutex_;  // guards what follows
  bool requested_ = false;
  std::function<void()> on_request_;
};

/// `cancel` (nullptr: not cancellable): a requested cancellation stops the member wait in
/// progress (the member's own cancellable wait), releases the members taken and completes
/// with CancelledError, unless the walk has already taken what it needs.
void run_multi_try(const std::shared_ptr<MultiLockState>& state, std::int64_t owner, Duration wait,
                   Duration lease, AttemptDone done, std::shared_ptr<MultiCancel> cancel);

/// A uniformly random integer in [low, high); low when the range is empty.
long long random_between(long long low, long long high);

}  // namespace redisync::detail
