// SPDX-License-Identifier: Apache-2.0
// The acquisition of FairLock and NonReentrantFairLock as one record per acquisition, in both
// handoff modes: what its steps share (the Client, kind, name, owner, lease, allowance, grant
// link, poll count) is kept once, and each request is built when it is sent.
#include "sync/locks/fair_lock_steps.h"

#include <algorithm>
#include <utility>

#include "sync/acquire/fair_poll.h"
#include "sync/acquire/grant.h"
#include "sync/identity.h"

namespace redisync {

namespace sync {

long long fair_poll_ms(long long reply, int idle_polls, long long allowance_ms) {
  constexpr long long kFirst = 10;
  // Only the head is sent a message, and a head can leave the queue without anyone telling
  // the next one (a give-up, or a dead head dropped by another waiter's attempt while the
  // lock is free). Re-polling at least every second bounds such a stall; a long estimate
  // would otherwise be slept out in full. And each poll refreshes the waiter's deadline,
  // which runs out one allowance after it: three polls per allowance keep a live waiter in.
  const long long most = std::clamp<long long>(allowance_ms / 3, kFirst, 1000);
  if (reply > 0) return std::min(reply, most);
  const int doublings = std::clamp(idle_polls, 0, 7);
  return std::min(most, kFirst << doublings);
}

}  // namespace sync

namespace detail {

std::string fair_queue_key(const std::string& name) {
  return "redisson_lock_queue:" + sync::hash_tag(name);
}
std::string fair_timeout_key(const std::string& name) {
  return "redisson_lock_timeout:" + sync::hash_tag(name);
}
std::string fair_grant_key(const std::string& name) {
  return "redisync_fair_grant:" + sync::hash_tag(name);
}

namespace {

// The step an acquisition sends. The non-reentrant kind too takes the grant step when it has a
// link: an acquisition with a link is fresh, and the grant step refuses a hold of the owner
// that is not its grant (non_reentrant_lock.cpp); without one (not queueing) the guarded step.
const lua::Script& step_of(const FairAcquisition& how) {
  if (how.link) return lua::fair_lock_grant_acquire;
  return how.reentrant ? lua::fair_lock_acquire : lua::non_reentrant_fair_lock_acquire;
}

}  // namespace

FairLockSteps::FairLockSteps(std::shared_ptr<ClientCore> core, KindPtr kind, std::string name,
                             std::int64_t owner, Duration lease, FairAcquisition how)
    : HoldCountSteps(std::move(core), std::move(kind), std::move(name), owner, lease,
                     !how.reentrant),
      allowance_(core_->config().fair_lock_wait_timeout),
      how_(std::move(how)),
      script_(&publish_guarded(*core_, step_of(how_))) {
  if (how_.link) how_.link->deregister = {"HDEL", fair_grant_key(name_), field()};
}

std::string FairLockSteps::channel() const { return lock_channel(name_) + ":" + field(); }

std::vector<std::string> FairLockSteps::keys() const {
  std::vector<std::string> keys{name_, fair_queue_key(name_), fair_timeout_key(name_)};
  if (how_.link) {
    keys.push_back(fair_grant_key(name_));
    keys.push_back(sync::grant_mark_key(name_));
  }
  return keys;
}

std::vector<std::string> FairLockSteps::args() {
  std::vector<std::string> args{std::to_string(lease_.count()), field(),
                                std::to_string(allowance_.count()), kFairUnusedNow,
                                how_.queueing ? "1" : "0"};
  if (how_.link) {
    auto grant = how_.link->next_attempt(how_.deadline);
    args.push_back(std::move(grant.id));
    args.push_back(std::move(grant.period));
    args.push_back(std::move(grant.attempt));
    args.push_back(how_.reentrant ? "0" : "1");
  }
  // Refused before any write (the dead heads' drop included) when this user may not publish
  // on its own channel, the one a release wakes it on; which other waiters' channels a release
  // will need is known only then (fair_lock_release.lua checks them).
  return publish_guarded_args(*core_, std::move(args), channel(), name_);
}

sync::AttemptResult FairLockSteps::parse(const net::Reply& reply) {
  auto result = how_.link ? read_grant_reply(*how_.link, reply)  // -3: took its grant
                          : parse_nil_or_ttl(reply);
  if (!result.acquired) {
    result.ttl_ms = sync::fair_poll_ms(result.ttl_ms, idle_polls_, allowance_.count());
    idle_polls_ = reply.integer > 0 ? 0 : idle_polls_ + 1;
    if (how_.link) result.ttl_ms = how_.link->cap_wait(result.ttl_ms);
  }
  return result;
}

void FairLockSteps::finish(std::exception_ptr error, const sync::AcquireOutcome& outcome,
                           LoopDone done) {
  if (outcome.acquired || (!gave_up_ && !error)) return done(error, outcome);
  const std::string allow = std::to_string(allowance_.count());
  const auto& link = how_.link;
  if (!link || !link->listed) {
    return core_->executor().eval(
        lua::fair_lock_give_up, {fair_queue_key(name_), fair_timeout_key(name_)}, {field(), allow},
        [error, done](std::exception_ptr, net::Reply) { done(error, {}); }, net::Retry::always);
  }
  // Grant mode: also leaves the registrations, and releases and passes on a grant that raced
  // the give-up; the registry hears which (sync/acquire/grant.h).
  core_->executor().eval(
      lua::fair_lock_grant_give_up,
      {fair_queue_key(name_), fair_timeout_key(name_), name_, lock_channel(name_),
       fair_grant_key(name_), sync::grant_mark_key(name_), sync::grant_channel_prefix(name_)},
      {field(), allow, core_->publish_command(),
       std::to_string(core_->config().grant_lease.count()), link->id},
      [core = core_, link, error, done](std::exception_ptr, net::Reply) {
        core->grants().remove(*link);
        done(error, {});
      },
      net::Retry::always);
}

std::shared_ptr<FairLockSteps> fair_lock_steps(const std::shared_ptr<ClientCore>& core,
                                               const KindPtr& kind, const std::string& name,
                                               std::int64_t owner, Duration lease,
                                               FairAcquisition how) {
  return std::make_shared<FairLockSteps>(core, kind, name, owner, lease, std::move(how));
}

}  // namespace detail

}  // namespace redisync
