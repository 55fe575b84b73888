// SPDX-License-Identifier: Apache-2.0
// The starvation guard of the unfair locks (Config::starvation_guard): Lock and NonReentrantLock
// (lock_acquire.lua), FencedLock (fenced_lock_acquire.lua) and the write side of ReadWriteLock
// (rwlock_write_acquire.lua). A waiter that has waited
// longer than the guard claims the next turn in a key beside the lock; other redisync clients
// leave a free lock to it until it takes the lock or the claim expires. Redisson clients
// ignore the key (docs/performance.md, "The starvation guard of the unfair Lock").
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lua/scripts.h"
#include "sync/identity.h"
#include "sync/locks/lock_kind.h"

namespace redisync::detail {

/// The guard's period for this client, 0 when off. Off in a cluster: a second key makes the
/// acquire a multi-key script, which Redis refuses (TRYAGAIN) while the lock's slot migrates.
inline Duration starvation_guard_after(const ClientCore& core) {
  return core.config().topology == Topology::cluster ? Duration{0}
                                                     : core.config().starvation_guard;
}

/// The claim key beside the lock hash `name`, shared by Lock and FencedLock (one hash, one
/// turn to claim).
inline std::string lock_guard_key(const std::string& name) {
  return "redisync_lock_guard:" + sync::hash_tag(name);
}

/// One acquisition's view of the guard. Attempts of one acquisition run one after the other on
/// the I/O thread, so the reply's parser reads what its attempt's arguments said.
class StarvationGuard {
 public:
  explicit StarvationGuard(Duration after)
      : after_(after),
        started_(sync::Clock::now()),
        claim_ms_(std::to_string(std::max<long long>(5 * after.count(), 100))),
        poll_ms_(std::max<long long>(after.count() / 4, 1)) {}

  /// The script's claim arguments, written at `a[at]` ("1" once this acquisition has waited
  /// past the guard) and `a[at + 1]` (the claim's expiry in ms).
  std::vector<std::string> args(std::vector<std::string> a, std::size_t at) {
    claiming_ = sync::Clock::now() - started_ >= after_;
    claimed_ = claimed_ || claiming_;
    a[at] = claiming_ ? "1" : "0";
    a[at + 1] = claim_ms_;
    return a;
  }

  /// A claimant re-tries every quarter guard period rather than only on a release message
  /// (AttemptResult::shared_poll_ms) where a message may miss it or its claim may lapse:
  /// while it shares its lock's channel with other waiters of this process (a message wakes
  /// one of them, maybe one the claim turns away), and once it has lost the lock to another
  /// after a release (the claim, set for claim_ms, must still hold at the next release). A
  /// lone waiter never outrun sleeps until a message: 20,000 of them polling every 5 ms
  /// kept the server and the Client busy (issue 34).
  sync::AttemptResult parse(sync::AttemptResult result) const {
    if (!result.acquired && claiming_) result.shared_poll_ms = poll_ms_;
    return result;
  }

  /// The acquisition gives up: when some attempt asked for the claim, drops it (`field` on the
  /// guard key `key`, lock_guard_drop.lua), so a free lock is not held back for nobody. Fire
  /// and forget.
  void give_up(ClientCore& core, const std::string& key, const std::string& field) const {
    if (!claimed_) return;
    core.executor().eval(
        lua::lock_guard_drop, {key}, {field}, [](std::exception_ptr, net::Reply) {},
        net::Retry::always);
  }

 private:
  Duration after_;
  sync::Clock::time_point started_;
  std::string claim_ms_;
  long long poll_ms_;
  bool claiming_ = false;
  bool claimed_ = false;
};

}  // namespace redisync::detail
