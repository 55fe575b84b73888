// SPDX-License-Identifier: Apache-2.0
#include "sync/locks/hold_count_steps.h"

#include <utility>

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
  check_hold_count(core_, *kind_, name_, owner_, found_step(),
                   [self = shared_from_this(), done](std::exception_ptr error,
                                                     sync::AttemptResult result) mutable {
                     if (!error && result.acquired) return done(nullptr, result);
                     self->attempt(std::move(done));
                   });
}

void HoldCountSteps::settle(Done done) {
  check_hold_count(core_, *kind_, name_, owner_, found_step(), std::move(done));
}

void HoldCountSteps::undo(std::function<void()> then) {
  undo_acquire(core_, *kind_, name_, owner_, lease_, std::move(then));
}

}  // namespace redisync::detail
