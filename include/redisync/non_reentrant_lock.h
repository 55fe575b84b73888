// SPDX-License-Identifier: Apache-2.0
// redisync::NonReentrantLock and NonReentrantFairLock: Redisson's non-reentrant lock and fair
// lock (Redisson 4.4+, docs/wire-format.md §12).
#pragma once

#include <memory>
#include <string>

#include "redisync/export.h"
#include "redisync/basic_lock.h"

namespace redisync {

/// A lock that its holder cannot take again: for holders that are tasks or coroutines rather
/// than threads, where "the same owner asks again" is a bug (two tasks sharing an owner id)
/// and a silent re-entry would let both into the critical section.
///
/// Layout, leases, watchdog, waiting and release: exactly Lock's (docs/wire-format.md §2, §3, §13), so Java's
/// RLock, Java's non-reentrant lock, redisync::Lock and this class all exclude each other on
/// the same name. The difference is the acquire step: when the caller's owner field already
/// exists in the hash, the server changes nothing and the call throws ReentryError (Java:
/// IllegalMonitorStateException); it never waits for itself, and the hold count stays 1, so
/// one unlock() releases. That includes an owner holding the same name through a plain Lock.
///
/// Like Lock, it has the starvation guard (Config::starvation_guard, the same key as Lock's):
/// a waiter that has waited too long claims the next turn.
/// API, thread safety: as BasicLock (lock(), try_lock_for(), unlock(), async forms...).
class REDISYNC_API NonReentrantLock : public BasicLock {
 public:
  NonReentrantLock(std::shared_ptr<detail::ClientCore> core, std::string name);
};

/// The non-reentrant FairLock: FIFO queueing exactly as FairLock (docs/wire-format.md §4), a second acquire
/// by the holder throws ReentryError as NonReentrantLock does. It shares its queue with
/// FairLock and Java's fair locks of the same name.
class REDISYNC_API NonReentrantFairLock : public BasicLock {
 public:
  NonReentrantFairLock(std::shared_ptr<detail::ClientCore> core, std::string name);
};

}  // namespace redisync
