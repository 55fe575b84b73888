// SPDX-License-Identifier: Apache-2.0
#include "sync/locks/hold_count_steps.h"

#include <utility>

#include "lua/scripts.h"
#include "sync/locks/non_reentrant.h"

namespace redisync::detail {

void HoldCountSteps::attempt(Done done) {
  if (!refuse_reentry_) return send_attempt(shared_from_this(), std::move(done));
  send_attempt(shared_from_this(), [self = shared_from_this(), done = std::move(done)](
                                       std::exception_ptr error, sync::AttemptResult result) {
    error = as_reentry_error(std::move(error), self->what());  // outside any catch block
    done(std::move(error), result);
  });
}

void HoldCountSteps::recheck(Done done) {
  check_hold_count(core_, *kind_, name_, owner_, grant_link(), found_step(),
                   [self = shared_from_this(), done](std::exception_ptr error,
                                                     sync::AttemptResult result) mutable {
                     if (!error && result.acquired) return done(nullptr, result);
                     self->attempt(std::move(done));
                   });
}

void HoldCountSteps::settle(Done done) {
  check_hold_count(core_, *kind_, name_, owner_, grant_link(), found_step(), std::move(done));
}

void HoldCountSteps::undo(std::function<void()> then) {
  undo_acquire(core_, *kind_, name_, owner_, lease_, std::move(then));
}

namespace {

class SpinLockSteps final : public HoldCountSteps {
 public:
  using HoldCountSteps::HoldCountSteps;
  // Never subscribed to: the spin loop sleeps its backoff instead.
  std::string channel() const override { return {}; }
  bool undoable() const override { return false; }
  const lua::Script& script() const override { return lua::lock_acquire; }
  std::vector<std::string> keys() const override { return {name_}; }
  std::vector<std::string> args() override { return {std::to_string(lease_.count()), field()}; }
  sync::AttemptResult parse(const net::Reply& reply) override { return parse_nil_or_ttl(reply); }
};

}  // namespace

std::shared_ptr<HoldCountSteps> spin_lock_steps(const std::shared_ptr<ClientCore>& core,
                                                const KindPtr& kind, const std::string& name,
                                                std::int64_t owner, Duration lease) {
  return std::make_shared<SpinLockSteps>(core, kind, name, owner, lease);
}

}  // namespace redisync::detail
