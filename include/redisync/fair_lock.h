// SPDX-License-Identifier: Apache-2.0
// redisync::FairLock: Redisson's fair (FIFO) lock, getFairLock. Layout and semantics: wire
// docs/wire-format.md §4 (and §2, §3, §13 for what it shares with Lock).
#pragma once

#include <memory>
#include <string>

#include "redisync/export.h"
#include "redisync/basic_lock.h"

namespace redisync {

/// A reentrant lock granted in request order, compatible with Redisson's RFairLock: Java and
/// C++ waiters on the same name queue together.
///
/// Waiting threads queue in `redisson_lock_queue:{name}` with a deadline each in
/// `redisson_lock_timeout:{name}`; a release wakes only the waiter at the head, on its own
/// channel. A waiter's deadline runs one wait allowance A (Config::fair_lock_wait_timeout, 5 s)
/// per place from the head after its last poll; redisync waiters poll at least every third of
/// A, so a waiter that died or stopped while queued is skipped about A after its last poll,
/// and a live one keeps its place. (Redisson's A is the caller's wait, else 5 min, and its
/// waiters do not refresh: a dead Java waiter is skipped after that.)
/// A timed wait that gives up leaves the queue before try_lock_for() returns.
///
/// Deadlines in the queue are wall-clock epoch milliseconds. redisync's scripts read the
/// server's clock (TIME), so redisync clients need no synchronised clocks; Java clients pass
/// their own, so hosts sharing a fair lock with Redisson need synchronised clocks
/// (docs/wire-format.md §1.4).
///
/// API, leases, thread safety: as Lock (see BasicLock).
class REDISYNC_API FairLock : public BasicLock {
 public:
  FairLock(std::shared_ptr<detail::ClientCore> core, std::string name);
};

}  // namespace redisync
