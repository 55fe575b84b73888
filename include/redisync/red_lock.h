// SPDX-License-Identifier: Apache-2.0
// redisync::RedLock: the Redlock algorithm over N independent Redis masters (docs/wire-format.md
// §6). Read docs/redlock.md before relying on it: its safety depends on bounded process
// pauses, bounded clock drift and servers that do not forget keys on restart; a FencedLock's
// tokens are the safer choice when correctness (not just efficiency) depends on the lock.
// Redisson marks RedLock deprecated for these reasons; redisync keeps it, documented.
#pragma once

#include <initializer_list>
#include <vector>

#include "redisync/export.h"
#include "redisync/multi_lock.h"

namespace redisync {

/// A lock held when a majority (M/2 + 1) of its M members, each a lock of the same name on an
/// independent server (one Client per server), are held:
///
///     redisync::RedLock lock{c1.lock("job"), c2.lock("job"), c3.lock("job")};
///     auto report = lock.try_acquire(2s, 10s);  // wait up to 2 s, lease 10 s
///     if (report.acquired) { /* safe for report.validity */ }
///
/// Same API as MultiLock, with RedLock's parameters: up to M - (M/2 + 1) members may fail per
/// walk; each member waits at most max(remaining wait / M, 1 ms) (plus the reply timeout, so a
/// paused server costs at most that); a success whose validity time (lease - elapsed - clock
/// drift allowance of 0.01 x lease + 2 ms) is not positive is released and retried. A failed
/// attempt releases on every member, including those that did not answer in time (when their
/// answer arrives). Leases below MultiLock::kMinValidityLease (10 ms) are refused with
/// InvalidArgument: no attempt could have a positive validity. Release ignores members that
/// cannot be reached. lock() throws
/// MultiLockError when more members than tolerated are unreachable / timed out / failing.
class REDISYNC_API RedLock : public MultiLock {
 public:
  /// Throws InvalidArgument if `members` is empty or the members' names differ (the members
  /// are the same lock on different servers).
  RedLock(std::initializer_list<AnyLock> members);
  explicit RedLock(std::vector<AnyLock> members, MultiLockOptions options = {});

  /// Members that must be held: size() / 2 + 1.
  std::size_t quorum() const;
  /// The validity time of the last successful attempt (see AttemptReport::validity);
  /// Duration{0} if the last attempt failed.
  Duration validity() const { return last_attempt().validity; }
};

}  // namespace redisync
