// SPDX-License-Identifier: Apache-2.0
// The acquisition of Lock and NonReentrantLock as one record per acquisition, in both handoff
// modes: what its attempt, recheck, settle, undo and give-up steps share (the Client, kind,
// name, owner, lease, the starvation guard's or grant link's state) is kept once, and each
// step's request is built when it is sent. A sleeping waiter holds this record and its loop,
// nothing per step (issue 34: a waiter's bytes; before, each step was a closure with its own
// copy of the name, owner field, keys and arguments).
#include "sync/locks/hash_lock_steps.h"

#include <optional>
#include <utility>

#include "lua/scripts.h"
#include "lua/with_preludes.h"
#include "sync/acquire/grant.h"
#include "sync/locks/non_reentrant.h"
#include "sync/locks/starvation_guard.h"

namespace redisync::detail {

void HashLockSteps::attempt(Done done) {
  if (!refuse_reentry_) return send_attempt(shared_from_this(), std::move(done));
  send_attempt(shared_from_this(), [self = shared_from_this(), done = std::move(done)](
                                       std::exception_ptr error, sync::AttemptResult result) {
    // Mapped first, reported outside any catch block.
    error = as_reentry_error(std::move(error), self->what());
    done(std::move(error), result);
  });
}

void HashLockSteps::recheck(Done done) {
  check_hold_count(core_, *kind_, name_, owner_, nullptr,
                   [self = shared_from_this(), done](std::exception_ptr error,
                                                     sync::AttemptResult result) mutable {
                     if (!error && result.acquired) return done(nullptr, result);
                     self->attempt(std::move(done));
                   });
}

void HashLockSteps::settle(Done done) {
  check_hold_count(core_, *kind_, name_, owner_, nullptr, std::move(done));
}

void HashLockSteps::undo(std::function<void()> then) {
  undo_acquire(core_, *kind_, name_, owner_, lease_, std::move(then));
}

std::string HashLockSteps::channel() const { return lock_channel(name_); }

std::string HashLockSteps::what() const { return kind_->describe(*core_, name_); }

namespace {

// Wake mode (and an owner's re-entry in grant mode): lock_acquire.lua, or the kind's step in
// its place, with the starvation guard's key and claim when the guard is on.
class GuardedLockSteps final : public HashLockSteps {
 public:
  GuardedLockSteps(std::shared_ptr<ClientCore> core, KindPtr kind, std::string name,
                   std::int64_t owner, Duration lease, const lua::Script& step,
                   bool refuse_reentry)
      : HashLockSteps(std::move(core), std::move(kind), std::move(name), owner, lease,
                      refuse_reentry),
        script_(&publish_guarded(*core_, step)) {
    if (const Duration after = starvation_guard_after(*core_); after > Duration{0}) {
      guard_.emplace(after);
    }
  }

  // A claimant that gives up drops its claim, so a free lock is not held back for nobody.
  void give_up() override {
    if (guard_ && guard_->claimed()) {
      drop_guard_claim(*core_, lock_guard_key(name_), core_->owner_field(owner_));
    }
  }

  const lua::Script& script() const override { return *script_; }
  std::vector<std::string> keys() const override {
    if (guard_) return {name_, lock_guard_key(name_)};  // KEYS[2]: the guard's claim key
    return {name_};
  }
  std::vector<std::string> args() override {
    // Refused before any write when this user may not publish the release's message.
    std::vector<std::string> args = publish_guarded_args(
        *core_, {std::to_string(lease_.count()), core_->owner_field(owner_), "0", "0"},
        lock_channel(name_), name_);
    if (guard_) args = guard_->args(std::move(args), 2);  // ARGV[3..4]: the claim
    return args;
  }
  sync::AttemptResult parse(const net::Reply& reply) override {
    const sync::AttemptResult result = parse_nil_or_ttl(reply);
    return guard_ ? guard_->parse(result) : result;
  }

 private:
  const lua::Script* script_;  // the kind's step behind the publish guard
  std::optional<StarvationGuard> guard_;  // set when Config::starvation_guard is on
};

// Grant mode (docs/wire-format.md §18): lock_grant_acquire.lua, which registers the waiter and
// takes the grant made to it; its give-up leaves the registration and passes a grant on.
class GrantLockSteps final : public HashLockSteps {
 public:
  GrantLockSteps(std::shared_ptr<ClientCore> core, KindPtr kind, std::string name,
                 std::int64_t owner, Duration lease,
                 std::optional<sync::Clock::time_point> deadline,
                 std::shared_ptr<sync::GrantLink> link, bool non_reentrant)
      : HashLockSteps(std::move(core), std::move(kind), std::move(name), owner, lease,
                      non_reentrant),
        script_(&publish_guarded(
            *core_, lua::with_preludes<lua::lock_grant_acquire, lua::grant_pass_on>())),
        deadline_(deadline), link_(std::move(link)) {}

  void give_up() override { grant_give_up(core_, link_, name_, "")(); }

  const lua::Script& script() const override { return *script_; }
  std::vector<std::string> keys() const override { return lock_grant_keys(name_); }
  std::vector<std::string> args() override {
    auto args = grant_attempt_args(*link_, std::to_string(lease_.count()),
                                   core_->owner_field(owner_), deadline_);
    args.push_back("0");  // no token
    // A hold of the owner found that is not its grant: NON_REENTRANT_REACQUIRE (§12).
    args.push_back(refuse_reentry_ ? "1" : "0");
    // Refused before any write when this user may not publish the release's message.
    return publish_guarded_args(*core_, std::move(args), lock_channel(name_), name_);
  }
  sync::AttemptResult parse(const net::Reply& reply) override {
    return read_grant_reply(*link_, reply);
  }

 private:
  const lua::Script* script_;  // lock_grant_acquire.lua behind the publish guard
  std::optional<sync::Clock::time_point> deadline_;
  std::shared_ptr<sync::GrantLink> link_;
};

}  // namespace

std::shared_ptr<HashLockSteps> guarded_lock_steps(const std::shared_ptr<ClientCore>& core,
                                                  const KindPtr& kind, const std::string& name,
                                                  std::int64_t owner, Duration lease,
                                                  const lua::Script& step, bool refuse_reentry) {
  return std::make_shared<GuardedLockSteps>(core, kind, name, owner, lease, step,
                                            refuse_reentry);
}

std::shared_ptr<HashLockSteps> grant_lock_steps(const std::shared_ptr<ClientCore>& core,
                                                const KindPtr& kind, const std::string& name,
                                                std::int64_t owner, Duration lease,
                                                std::optional<sync::Clock::time_point> deadline,
                                                std::shared_ptr<sync::GrantLink> link,
                                                bool non_reentrant) {
  return std::make_shared<GrantLockSteps>(core, kind, name, owner, lease, deadline,
                                          std::move(link), non_reentrant);
}

void start_guarded_lock_loop(const std::shared_ptr<ClientCore>& core, const KindPtr& self,
                             const std::string& name, std::int64_t owner, LoopStart start,
                             const lua::Script& step, bool refuse_reentry) {
  auto steps = guarded_lock_steps(core, self, name, owner, start.lease, step, refuse_reentry);
  start_pubsub_loop(core, std::move(start), std::move(steps));
}

void start_lock_grant_loop(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                           const std::string& name, std::int64_t owner, LoopStart start,
                           std::shared_ptr<sync::GrantLink> link, bool non_reentrant) {
  auto steps = grant_lock_steps(core, kind, name, owner, start.lease, start.deadline, link,
                                non_reentrant);
  start_pubsub_loop(core, std::move(start), std::move(steps), std::move(link));
}

}  // namespace redisync::detail
