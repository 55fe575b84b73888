// SPDX-License-Identifier: Apache-2.0
// redisync::Lock: Redisson's reentrant RLock (docs/wire-format.md, "Lock"), as one lock kind on
// the shared flows of sync/locks/lock_kind.h. What only this kind has is its acquire step with the
// starvation guard (sync/locks/starvation_guard.h).
#include "redisync/lock.h"

#include "lua/scripts.h"
#include "lua/with_preludes.h"
#include "sync/identity.h"
#include "sync/locks/lock_kind.h"
#include "sync/locks/starvation_guard.h"

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
    detail::start_guarded_lock_loop(core, self, name, owner, effective_lease, deadline,
                                    std::move(done), lua::lock_acquire);
  }
};

}  // namespace

namespace detail {

void start_guarded_lock_loop(const std::shared_ptr<ClientCore>& core, const KindPtr& self,
                             const std::string& name, std::int64_t owner,
                             Duration effective_lease,
                             std::optional<sync::Clock::time_point> deadline, AcquireDone done,
                             const lua::Script& step, const AttemptWrap& wrap) {
  const Duration after = starvation_guard_after(*core);
  const std::string channel = lock_channel(name);
  const std::string what = self->describe(*core, name);
  // Refused before any write when this user may not publish the release's message.
  std::vector<std::string> fixed = publish_guarded_args(
      *core, {std::to_string(effective_lease.count()), core->owner_field(owner), "0", "0"},
      channel, name);
  std::vector<std::string> keys{name};
  ArgsFn args;
  ReplyParser parse;  // nil / PTTL
  std::function<void()> on_give_up;
  if (after > Duration{0}) {
    keys.push_back(lock_guard_key(name));  // KEYS[2]
    auto guard = std::make_shared<StarvationGuard>(after);
    on_give_up = starvation_guard_drop(core, guard, keys[1], fixed[1]);
    args = [guard, fixed = std::move(fixed)] { return guard->args(fixed, 2); };  // ARGV[3..4]
    parse = [guard](const net::Reply& reply) { return guard->parse(parse_nil_or_ttl(reply)); };
  } else {
    args = fixed_args(std::move(fixed));
  }
  auto attempt = script_attempt(core, publish_guarded(*core, step), std::move(keys),
                                std::move(args), what, std::move(parse),
                                release_undo(core, self, name, owner, effective_lease));
  if (wrap) attempt = wrap(std::move(attempt), what);
  // After a timeout or a dropped connection the attempt may have run: the owner's hold
  // count on the server tells (only this owner ever changes its own field).
  auto recheck = hold_count_recheck(core, self, name, owner, attempt);
  // Before giving up after an attempt that may have run, find out whether it did.
  start_pubsub_loop(core, channel, deadline, std::move(attempt), std::move(done),
                    std::move(on_give_up), std::move(recheck),
                    hold_count_check(core, self, name, owner));
}

}  // namespace detail

Lock::Lock(std::shared_ptr<detail::ClientCore> core, std::string name)
    : BasicLock(std::move(core), std::move(name), detail::shared_kind<PlainKind>()) {}

}  // namespace redisync
