// SPDX-License-Identifier: Apache-2.0
#include "sync/acquire/acquire_steps.h"

#include <utility>

namespace redisync::sync {

namespace {

class FunctionSteps final : public AcquireSteps {
 public:
  FunctionSteps(std::string channel, Step attempt, Step recheck, Step settle,
                std::function<void()> give_up)
      : channel_(std::move(channel)),
        attempt_(std::move(attempt)),
        recheck_(std::move(recheck)),
        settle_(std::move(settle)),
        give_up_(std::move(give_up)) {}

  std::string channel() const override { return channel_; }
  void attempt(Done done) override { attempt_(std::move(done)); }
  bool can_recheck() const override { return static_cast<bool>(recheck_); }
  bool can_settle() const override { return static_cast<bool>(settle_); }
  void recheck(Done done) override {
    if (recheck_) return recheck_(std::move(done));
    attempt_(std::move(done));
  }
  void settle(Done done) override {
    if (settle_) return settle_(std::move(done));
    done(nullptr, {});
  }
  void give_up() override {
    if (give_up_) give_up_();
  }

 private:
  std::string channel_;
  Step attempt_;
  Step recheck_;
  Step settle_;
  std::function<void()> give_up_;
};

}  // namespace

std::shared_ptr<AcquireSteps> function_steps(std::string channel, AcquireSteps::Step attempt,
                                             AcquireSteps::Step recheck,
                                             AcquireSteps::Step settle,
                                             std::function<void()> give_up) {
  return std::make_shared<FunctionSteps>(std::move(channel), std::move(attempt),
                                         std::move(recheck),
                                         std::move(settle), std::move(give_up));
}

}  // namespace redisync::sync
