// SPDX-License-Identifier: Apache-2.0
// redisync::SpinLock: Redisson's spin lock, getSpinLock (docs/wire-format.md §10): the reentrant lock's
// layout without any pub/sub; waiters sleep and retry with a backoff.
#pragma once

#include <memory>
#include <string>

#include "redisync/export.h"
#include "redisync/basic_lock.h"

namespace redisync {

/// How a SpinLock waiter spaces its retries (SpinLock::Backoff).
struct REDISYNC_API SpinBackoff {
  enum class Kind {
    exponential,  ///< first sleep `first`; after the k-th sleep the next is
                  ///< min(cap, previous * multiplier + a random integer in [0, k)) ms
    constant,     ///< every sleep is `delay`
  };
  Kind kind = Kind::exponential;
  Duration first{1};   ///< exponential: the first sleep
  Duration cap{128};   ///< exponential: the longest sleep; once reached it stays there
  int multiplier = 2;  ///< exponential: growth factor (>= 1)
  Duration delay{64};  ///< constant: the sleep between attempts

  /// Redisson's default: 1 ms, doubling (plus jitter) up to 128 ms.
  static SpinBackoff exponential(Duration first = Duration{1}, Duration cap = Duration{128},
                                 int multiplier = 2) {
    return SpinBackoff{Kind::exponential, first, cap, multiplier, Duration{64}};
  }
  /// A fixed pause between attempts (Redisson's constant backoff, default 64 ms).
  static SpinBackoff constant(Duration delay = Duration{64}) {
    return SpinBackoff{Kind::constant, Duration{1}, Duration{128}, 2, delay};
  }
  /// Throws InvalidArgument naming the first invalid field.
  void validate() const;
};

/// A reentrant lock with Lock's layout (§2: hash `name`, owner field -> hold count, watchdog
/// renewal) that never publishes or subscribes: releases are silent and waiters poll with a
/// backoff (on the Client's I/O thread timers; no thread blocks but the caller). For
/// deployments where pub/sub is unavailable or too costly with very many waiters.
///
/// Interop: Java's getSpinLock(name) uses the same keys. A waiter of the pub/sub kinds (Lock)
/// on the same name is not woken by spin-lock releases and retries when the lease it saw ends.
///
/// API, leases, thread safety: as Lock (see BasicLock).
class REDISYNC_API SpinLock : public BasicLock {
 public:
  using Backoff = SpinBackoff;

  SpinLock(std::shared_ptr<detail::ClientCore> core, std::string name,
           const Backoff& backoff = Backoff::exponential());

  const Backoff& backoff() const { return backoff_; }

 private:
  Backoff backoff_;
};

}  // namespace redisync
