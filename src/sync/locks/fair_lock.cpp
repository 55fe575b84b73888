// SPDX-License-Identifier: Apache-2.0
// redisync::FairLock: Redisson's fair lock (docs/wire-format.md §4).
#include "redisync/fair_lock.h"

#include "lua/scripts.h"
#include "sync/acquire/grant.h"
#include "sync/locks/fair_lock_steps.h"
#include "sync/locks/lock_kind.h"
#include "sync/locks/non_reentrant.h"

namespace redisync {

namespace {

class FairKind final : public detail::LockKind {
 public:
  explicit FairKind(bool reentrant = true) : reentrant_(reentrant) {}
  std::string noun() const override { return reentrant_ ? "fair lock" : "non-reentrant fair lock"; }
  detail::ReleaseReply release_reply() const override {
    return detail::ReleaseReply::own_or_absent;
  }

  void start_loop(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  std::int64_t owner, detail::LoopStart start) const override {
    if (!reentrant_) {  // two tasks sharing an owner id (non_reentrant_lock.cpp)
      if (auto error = detail::waiting_owner_error(*core, name, owner, describe(*core, name))) {
        return start.done(error, {});
      }
    }
    detail::FairAcquisition how;
    how.reentrant = reentrant_;
    how.queueing = start.wait != Duration{0};
    how.deadline = start.deadline;
    // Grant mode (sync/acquire/grant.h): a queued waiter also registers, with its allowance,
    // and a release grants it the lock when it is the head.
    if (how.queueing) how.link = detail::grant_link(core, *this, name, owner);
    const bool queueing = how.queueing;
    auto link = how.link;
    auto steps =
        detail::fair_lock_steps(core, shared_from_this(), name, owner, start.lease, std::move(how));
    if (!queueing) {
      // §4.4: one attempt, never queued; nothing to subscribe to or clean up.
      return steps->attempt(
          [done = std::move(start.done)](std::exception_ptr error, sync::AttemptResult r) {
            done(error, sync::outcome_of(error, r));
          });
    }
    start.done = [steps, done = std::move(start.done)](std::exception_ptr error,
                                                       const sync::AcquireOutcome& outcome) {
      steps->finish(error, outcome, done);
    };
    detail::start_pubsub_loop(core, std::move(start), std::move(steps), std::move(link));
  }

  void release_step(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                    const detail::HoldRef& hold, Duration lease, const std::string& record,
                    net::ReplyHandler handler) const override {
    std::vector<std::string> keys{name, detail::fair_queue_key(name),
                                  detail::fair_timeout_key(name), detail::lock_channel(name),
                                  record};
    std::vector<std::string> args{"0",
                                  std::to_string(lease.count()),
                                  hold.field,
                                  detail::kFairUnusedNow,
                                  core->publish_command(),
                                  std::to_string(detail::lock_release_record_ttl_ms(*core))};
    if (core->config().handoff == Handoff::grant) {  // the head may be granted the lock
      keys.push_back(detail::fair_grant_key(name));
      keys.push_back(sync::grant_mark_key(name));
      keys.push_back(sync::grant_channel_prefix(name));
      args.push_back(std::to_string(core->config().grant_lease.count()));
    }
    detail::acked_release(core, hold, lua::fair_lock_release, std::move(keys), std::move(args),
                          record, std::move(handler));
  }

  void force_step(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  net::ReplyHandler handler) const override {
    core->executor().eval(lua::fair_lock_force_release,
                          {name, detail::fair_queue_key(name), detail::fair_timeout_key(name),
                           detail::lock_channel(name)},
                          {"0", detail::kFairUnusedNow, core->publish_command()},
                          std::move(handler), net::Retry::always);
  }

 private:
  bool reentrant_;
};

}  // namespace

FairLock::FairLock(std::shared_ptr<detail::ClientCore> core, std::string name)
    : BasicLock(std::move(core), std::move(name), detail::shared_kind<FairKind>()) {}

namespace detail {
KindPtr non_reentrant_fair_kind() { return std::make_shared<const FairKind>(false); }
}  // namespace detail

}  // namespace redisync
