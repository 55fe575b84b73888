// SPDX-License-Identifier: Apache-2.0
// redisync::FairLock: Redisson's fair lock (docs/wire-format.md §4).
#include "redisync/fair_lock.h"

#include <algorithm>
#include <chrono>

#include "lua/scripts.h"
#include "lua/with_preludes.h"
#include "sync/acquire/fair_poll.h"
#include "sync/acquire/grant.h"
#include "sync/identity.h"
#include "sync/locks/lock_kind.h"
#include "sync/locks/non_reentrant.h"

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

namespace {

// The fair lock's scripts run with the shared "drop dead heads" sub-step (§4.2) in front.
template <const lua::Script& Body>
const lua::Script& with_dead_heads() {
  return lua::with_preludes<Body, lua::fair_lock_dead_heads>();
}

// Release and grant-mode give-up: also the head's wake-up or grant (fair_grant_pass_on.lua).
template <const lua::Script& Body>
const lua::Script& with_pass_on() {
  return lua::with_preludes<Body, lua::fair_lock_dead_heads, lua::publish_check,
                           lua::grant_pass_on, lua::fair_grant_pass_on, lua::release_record>();
}

// The scripts' former "now" argument: they read the server's TIME instead (one clock for
// every client; docs/safety.md "Clocks"). The slot is kept so the argument layout is stable.
constexpr const char* kUnusedNow = "0";

std::string queue_key(const std::string& name) {
  return "redisson_lock_queue:" + sync::hash_tag(name);
}
std::string timeout_key(const std::string& name) {
  return "redisson_lock_timeout:" + sync::hash_tag(name);
}
// Grant mode (sync/acquire/grant.h): the grant-capable waiters, "<deadline>:<allowance>" by owner
// field (fair_grant_pass_on.lua). A hash, not Lock's sorted set: only the queue head is ever
// granted, and a grant needs that head's wait allowance.
std::string fair_grant_key(const std::string& name) {
  return "redisync_fair_grant:" + sync::hash_tag(name);
}

// The acquire step of a grant-capable waiter: the grant mark and registration helpers in front.
const lua::Script& grant_acquire() {
  return lua::with_preludes<lua::fair_lock_acquire, lua::fair_lock_dead_heads, lua::grant_pass_on,
                            lua::fair_grant_pass_on>();
}

// The non-reentrant fair lock's acquire step (§12): the guard in front of the usual one.
const lua::Script& non_reentrant_acquire() {
  static const std::string source = std::string(lua::non_reentrant_guard.source) + "\n" +
                                    std::string(with_dead_heads<lua::fair_lock_acquire>().source);
  static const lua::Script script{"non_reentrant_fair_lock_acquire", source};
  return script;
}

class FairKind final : public detail::LockKind {
 public:
  explicit FairKind(bool reentrant = true) : reentrant_(reentrant) {}
  std::string noun() const override {
    return reentrant_ ? "fair lock" : "non-reentrant fair lock";
  }
  detail::ReleaseReply release_reply() const override {
    return detail::ReleaseReply::own_or_absent;
  }

  void start_loop(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  std::int64_t owner, detail::LoopStart start) const override {
    const Duration effective_lease = start.lease;
    const auto deadline = start.deadline;
    detail::LoopDone done = std::move(start.done);
    if (!reentrant_) {  // two tasks sharing an owner id (non_reentrant_lock.cpp)
      if (auto error = detail::waiting_owner_error(*core, name, owner, describe(*core, name))) {
        return done(error, {});
      }
    }
    const std::string field = core->owner_field(owner);
    const bool queueing = start.wait != Duration{0};
    // Wait allowance A (§4.1): the configured one for every redisync waiter, whatever its wait
    // (Redisson takes the caller's wait when there is one). redisync waiters refresh their
    // deadlines as they poll, so a short A costs a live waiter nothing, and a killed or
    // stopped one holds the head of the queue for about A; and one A for all keeps the
    // deadlines of a queue consistent (a pop subtracts the popper's A from everyone).
    const Duration allowance = core->config().fair_lock_wait_timeout;
    const std::string lease = std::to_string(effective_lease.count());
    const std::string allow = std::to_string(allowance.count());
    auto idle_polls = std::make_shared<int>(0);
    // Grant mode (sync/acquire/grant.h): a queued waiter also registers, with its allowance, and a
    // release grants it the lock when it is the head. The non-reentrant kind too: an acquisition
    // with a link is fresh and sends the unguarded step (a field it finds is its grant), one
    // without (a re-entry, or not queueing) the guarded one (non_reentrant_lock.cpp).
    std::shared_ptr<sync::GrantLink> link;
    if (queueing) link = detail::grant_link(core, *this, name, owner);
    const bool guarded = !reentrant_ && !link;
    if (link) link->deregister = {"HDEL", fair_grant_key(name), field};
    std::vector<std::string> keys{name, queue_key(name), timeout_key(name)};
    if (link) {
      keys.push_back(fair_grant_key(name));
      keys.push_back(sync::grant_mark_key(name));
    }
    detail::ReplyParser plain = detail::parse_nil_or_ttl;
    if (link) plain = detail::grant_parse(link);  // -3: took its grant
    const auto& step = guarded ? non_reentrant_acquire()
                       : link  ? grant_acquire()
                               : with_dead_heads<lua::fair_lock_acquire>();
    auto attempt = detail::script_attempt(
        core, detail::publish_guarded(*core, step), std::move(keys),
        // Refused before any write (the dead heads' drop included) when this user may not
        // publish on its own channel, the one a release wakes it on; which other waiters'
        // channels a release will need is known only then (fair_lock_release.lua checks them).
        detail::publish_guarded_args(
            *core,
            [lease, field, allow, queueing, link, deadline, reentrant = reentrant_] {
              std::vector<std::string> args{lease, field, allow, kUnusedNow,
                                            queueing ? "1" : "0"};
              if (link) {
                auto grant = link->next_attempt(deadline);
                args.push_back(std::move(grant.id));
                args.push_back(std::move(grant.period));
                args.push_back(std::move(grant.attempt));
                args.push_back(reentrant ? "0" : "1");
              }
              return args;
            },
            detail::lock_channel(name) + ":" + field, name),
        describe(*core, name),
        [idle_polls, link, plain, allowance](const net::Reply& reply) {
          auto result = plain(reply);
          if (!result.acquired) {
            result.ttl_ms = sync::fair_poll_ms(result.ttl_ms, *idle_polls, allowance.count());
            *idle_polls = reply.integer > 0 ? 0 : *idle_polls + 1;
            if (link) result.ttl_ms = link->cap_wait(result.ttl_ms);
          }
          return result;
        },
        detail::release_undo(core, shared_from_this(), name, owner, effective_lease));
    // The non-reentrant kind: its guard's refusal (or, with a link, the step's own refusal of
    // a hold that is not its grant) is a ReentryError.
    if (!reentrant_) attempt = detail::refuse_reentry(std::move(attempt), describe(*core, name));
    if (!queueing) {
      // §4.4: one attempt, never queued; nothing to subscribe to or clean up.
      return attempt([done](std::exception_ptr error, sync::AttemptResult r) {
        done(error, sync::outcome_of(error, r));
      });
    }
    // A waiter that stops waiting (timed out, failed) leaves the queue (§4.5) before the
    // caller hears about it, so nothing of it is left behind once try_lock_for() returns.
    auto gave_up = std::make_shared<bool>(false);
    auto finish = [core, name, field, allow, gave_up, done, link](
                      std::exception_ptr error, const sync::AcquireOutcome& outcome) {
      if (outcome.acquired || (!*gave_up && !error)) return done(error, outcome);
      if (!link || !link->listed) {
        return core->executor().eval(
            lua::fair_lock_give_up, {queue_key(name), timeout_key(name)}, {field, allow},
            [error, done](std::exception_ptr, net::Reply) { done(error, {}); },
            net::Retry::always);
      }
      // Grant mode: also leaves the registrations, and releases and passes on a grant that
      // raced the give-up; the registry hears which (sync/acquire/grant.h).
      core->executor().eval(
          with_pass_on<lua::fair_lock_give_up>(),
          {queue_key(name), timeout_key(name), name, detail::lock_channel(name),
           fair_grant_key(name), sync::grant_mark_key(name), sync::grant_channel_prefix(name)},
          {field, allow, core->publish_command(),
           std::to_string(core->config().grant_lease.count()), link->id},
          [core, link, error, done](std::exception_ptr, net::Reply) {
            core->grants().remove(link->channel, link->field);
            done(error, {});
          },
          net::Retry::always);
    };
    // Each waiter listens on its own channel: a release wakes only the head (§4.8).
    auto recheck = detail::hold_count_recheck(core, shared_from_this(), name, owner, attempt);
    start.done = std::move(finish);
    detail::start_pubsub_loop(core, detail::lock_channel(name) + ":" + field, std::move(start),
                              std::move(attempt),
                              [gave_up] { *gave_up = true; }, std::move(recheck),
                              detail::hold_count_check(core, shared_from_this(), name, owner),
                              link);
  }

  void release_step(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                    const detail::HoldRef& hold, Duration lease, const std::string& record,
                    net::ReplyHandler handler) const override {
    std::vector<std::string> keys{name, queue_key(name), timeout_key(name),
                                  detail::lock_channel(name), record};
    std::vector<std::string> args{"0", std::to_string(lease.count()), hold.field, kUnusedNow,
                                  core->publish_command(),
                                  std::to_string(detail::lock_release_record_ttl_ms(*core))};
    if (core->config().handoff == Handoff::grant) {  // the head may be granted the lock
      keys.push_back(fair_grant_key(name));
      keys.push_back(sync::grant_mark_key(name));
      keys.push_back(sync::grant_channel_prefix(name));
      args.push_back(std::to_string(core->config().grant_lease.count()));
    }
    detail::acked_release(core, hold, with_pass_on<lua::fair_lock_release>(), std::move(keys),
                          std::move(args), record, std::move(handler));
  }

  void force_step(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  net::ReplyHandler handler) const override {
    core->executor().eval(lua::with_preludes<lua::fair_lock_force_release,
                                             lua::fair_lock_dead_heads, lua::publish_check>(),
                          {name, queue_key(name), timeout_key(name), detail::lock_channel(name)},
                          {"0", kUnusedNow, core->publish_command()}, std::move(handler),
                          net::Retry::always);
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
