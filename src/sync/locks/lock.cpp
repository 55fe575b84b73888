// SPDX-License-Identifier: Apache-2.0
// redisync::Lock: Redisson's reentrant RLock (docs/wire-format.md, "Lock"), as one lock kind on
// the shared flows of sync/locks/lock_kind.h. What only this kind has is its acquire step with the
// starvation guard.
#include "redisync/lock.h"

#include <algorithm>

#include "lua/scripts.h"
#include "lua/with_preludes.h"
#include "sync/identity.h"
#include "sync/locks/lock_kind.h"

namespace redisync {

namespace {

class PlainKind final : public detail::HashLockKind {
 public:
  std::string noun() const override { return "lock"; }

  void start_loop(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  std::int64_t owner, Duration effective_lease, Duration /*wait*/,
                  std::optional<sync::Clock::time_point> deadline,
                  detail::AcquireDone done) const override {
    const auto self = shared_from_this();
    // Grant mode: the registering acquire; no starvation guard (a registered waiter is
    // granted the lock in turn).
    if (auto link = detail::grant_link(core, *this, name, owner)) {
      return detail::start_lock_grant_loop(core, self, name, owner, effective_lease, deadline,
                                           std::move(link), std::move(done));
    }
    const Duration after = guard_after(*core);
    detail::ArgsFn args = detail::fixed_args(
        {std::to_string(effective_lease.count()), core->owner_field(owner), "0", "0"});
    detail::ReplyParser parse;  // nil / PTTL
    std::function<void()> on_give_up;
    if (after > Duration{0}) {
      auto guard = std::make_shared<Guard>(after);
      args = [guard, fixed = args()] { return guard->args(fixed); };
      parse = [guard](const net::Reply& reply) { return guard->parse(reply); };
      // A claimant that gives up drops its claim (a free lock is not held back for nobody).
      on_give_up = [core, guard, key = keys(*core, name)[1], field = core->owner_field(owner)] {
        if (!guard->claimed()) return;
        core->executor().eval(lua::lock_guard_drop, {key}, {field},
                              [](std::exception_ptr, net::Reply) {}, net::Retry::always);
      };
    }
    // Refused before any write when this user may not publish the release's message.
    args = detail::publish_guarded_args(*core, std::move(args), detail::lock_channel(name), name);
    auto attempt = detail::script_attempt(
        core, detail::publish_guarded(*core, lua::lock_acquire), keys(*core, name), std::move(args),
        describe(*core, name),
        std::move(parse), detail::release_undo(core, self, name, owner, effective_lease));
    // After a timeout or a dropped connection the attempt may have run: the owner's hold
    // count on the server tells (only this owner ever changes its own field).
    auto recheck = detail::hold_count_recheck(core, self, name, owner, attempt);
    // Before giving up after an attempt that may have run, find out whether it did.
    detail::start_pubsub_loop(core, detail::lock_channel(name), deadline, std::move(attempt),
                              std::move(done), std::move(on_give_up), std::move(recheck),
                              detail::hold_count_check(core, self, name, owner));
  }

 private:
  // The starvation guard (lock_acquire.lua): a waiter that has waited longer than
  // Config::starvation_guard claims the next turn; the claim lasts a few guard periods and is
  // renewed by each attempt. Off in a cluster: a second key makes the acquire a multi-key
  // script, which Redis refuses (TRYAGAIN) while the lock's slot is being migrated.
  static Duration guard_after(const detail::ClientCore& core) {
    return core.config().topology == Topology::cluster ? Duration{0}
                                                       : core.config().starvation_guard;
  }

  static std::vector<std::string> keys(const detail::ClientCore& core, const std::string& name) {
    if (guard_after(core) <= Duration{0}) return {name};
    return {name, "redisync_lock_guard:" + sync::hash_tag(name)};
  }

  // One acquisition's view of the guard. Attempts of one acquisition run one after the
  // other on the I/O thread, so the reply's parser reads what its attempt's arguments said.
  class Guard {
   public:
    explicit Guard(Duration after)
        : after_(after),
          started_(sync::Clock::now()),
          claim_ms_(std::to_string(std::max<long long>(5 * after.count(), 100))),
          poll_ms_(std::max<long long>(after.count() / 4, 1)) {}

    // ARGV[3] "1" once this acquisition has waited past the guard; ARGV[4] the claim's expiry.
    std::vector<std::string> args(std::vector<std::string> a) {
      claiming_ = sync::Clock::now() - started_ >= after_;
      claimed_ = claimed_ || claiming_;
      a[2] = claiming_ ? "1" : "0";
      a[3] = claim_ms_;
      return a;
    }

    // A claimant re-tries every quarter guard period rather than only on a release message:
    // the message may wake another waiter of this process instead (one waiter per process
    // per release), which the claim turns away.
    sync::AttemptResult parse(const net::Reply& reply) const {
      sync::AttemptResult result = detail::parse_nil_or_ttl(reply);
      if (!result.acquired && claiming_) {
        result.ttl_ms = result.ttl_ms < 0 ? poll_ms_ : std::min(result.ttl_ms, poll_ms_);
      }
      return result;
    }

    bool claimed() const { return claimed_; }

   private:
    Duration after_;
    sync::Clock::time_point started_;
    std::string claim_ms_;
    long long poll_ms_;
    bool claiming_ = false;
    bool claimed_ = false;  // some attempt of this acquisition asked for the claim
  };
};

}  // namespace

Lock::Lock(std::shared_ptr<detail::ClientCore> core, std::string name)
    : BasicLock(std::move(core), std::move(name), std::make_shared<const PlainKind>()) {}

}  // namespace redisync
