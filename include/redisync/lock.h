// SPDX-License-Identifier: Apache-2.0
// redisync::Lock: Redisson's reentrant RLock. Layout and semantics: docs/wire-format.md, "Lock".
#pragma once

#include <memory>
#include <string>

#include "redisync/export.h"
#include "redisync/basic_lock.h"

namespace redisync {

/// A distributed reentrant lock on Redis, compatible with Redisson's RLock: a Java service
/// using Redisson's getLock(name) on the same server excludes and is excluded by this lock,
/// and each side's release wakes the other's waiters.
///
/// The API (blocking, *TimedLockable*, async with completion tokens, leases and the watchdog)
/// is BasicLock's, shared by every lock kind. What is particular to this kind:
/// - it is unfair: a released lock goes to whichever waiter's retry reaches the server first
///   (use FairLock for FIFO order);
/// - with Config::starvation_guard set, a waiter that has waited that long claims the next
///   turn from other redisync clients (a redisync-only key; Redisson clients ignore it);
/// - waiting is push-based: a waiter subscribes to the lock's channel and sleeps until a
///   release message or the holder's remaining lease, then retries; it never polls.
class REDISYNC_API Lock : public BasicLock {
 public:
  Lock(std::shared_ptr<detail::ClientCore> core, std::string name);
};

}  // namespace redisync
