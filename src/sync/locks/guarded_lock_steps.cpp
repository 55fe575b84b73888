// SPDX-License-Identifier: Apache-2.0
// The wake-mode acquisition of Lock and NonReentrantLock (starvation_guard.h) as one record:
// what its attempt, recheck, settle and give-up steps share (the Client, kind, name, owner,
// lease, the guard's state) is kept once, and each step's request is built when it is sent.
// A sleeping waiter holds this record and its loop, nothing per step (issue 34: a waiter's
// bytes; before, each step was a closure with its own copy of the name, owner field, keys and
// arguments).
#include <optional>
#include <utility>

#include "sync/locks/lock_kind.h"
#include "sync/locks/non_reentrant.h"
#include "sync/locks/starvation_guard.h"

namespace redisync::detail {

namespace {

class GuardedLockSteps final : public sync::AcquireSteps,
                               public AttemptRequest,
                               public std::enable_shared_from_this<GuardedLockSteps> {
 public:
  GuardedLockSteps(std::shared_ptr<ClientCore> core, KindPtr kind, std::string name,
                   std::int64_t owner, Duration lease, const lua::Script& step,
                   bool refuse_reentry)
      : core_(std::move(core)), kind_(std::move(kind)), name_(std::move(name)), owner_(owner),
        lease_(lease), script_(&publish_guarded(*core_, step)), refuse_reentry_(refuse_reentry) {
    if (const Duration after = starvation_guard_after(*core_); after > Duration{0}) {
      guard_.emplace(after);
    }
  }

  // --- AcquireSteps ---
  void attempt(Done done) override {
    if (!refuse_reentry_) return send_attempt(shared_from_this(), std::move(done));
    send_attempt(shared_from_this(), [self = shared_from_this(), done = std::move(done)](
                                         std::exception_ptr error, sync::AttemptResult result) {
      // Mapped first, reported outside any catch block.
      error = as_reentry_error(std::move(error), self->what());
      done(std::move(error), result);
    });
  }
  bool can_recheck() const override { return true; }
  bool can_settle() const override { return true; }
  // After a timeout or a dropped connection the attempt may have run: the owner's hold count
  // on the server tells (only this owner ever changes its own field). A non-reentrant lock's
  // recheck must read, never resend: a second run would refuse our own first hold.
  void recheck(Done done) override {
    check_hold_count(core_, *kind_, name_, owner_, nullptr,
                     [self = shared_from_this(), done](std::exception_ptr error,
                                                       sync::AttemptResult result) mutable {
                       if (!error && result.acquired) return done(nullptr, result);
                       self->attempt(std::move(done));
                     });
  }
  // Before giving up after an attempt that may have run, find out whether it did.
  void settle(Done done) override {
    check_hold_count(core_, *kind_, name_, owner_, nullptr, std::move(done));
  }
  // A claimant that gives up drops its claim, so a free lock is not held back for nobody.
  void give_up() override {
    if (guard_ && guard_->claimed()) {
      drop_guard_claim(*core_, lock_guard_key(name_), core_->owner_field(owner_));
    }
  }

  // --- AttemptRequest ---
  ClientCore& client() const override { return *core_; }
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
  bool undoable() const override { return true; }
  void undo(std::function<void()> then) override {
    undo_acquire(core_, *kind_, name_, owner_, lease_, std::move(then));
  }
  std::string what() const override { return kind_->describe(*core_, name_); }

 private:
  std::shared_ptr<ClientCore> core_;
  KindPtr kind_;
  std::string name_;
  std::int64_t owner_;
  Duration lease_;
  const lua::Script* script_;  // the kind's step behind the publish guard
  bool refuse_reentry_;
  std::optional<StarvationGuard> guard_;  // set when Config::starvation_guard is on
};

}  // namespace

void start_guarded_lock_loop(const std::shared_ptr<ClientCore>& core, const KindPtr& self,
                             const std::string& name, std::int64_t owner,
                             Duration effective_lease,
                             std::optional<sync::Clock::time_point> deadline, AcquireDone done,
                             const lua::Script& step, bool refuse_reentry) {
  auto steps = std::make_shared<GuardedLockSteps>(core, self, name, owner, effective_lease, step,
                                                  refuse_reentry);
  start_pubsub_loop(core, lock_channel(name), deadline, std::move(steps), std::move(done));
}

}  // namespace redisync::detail
