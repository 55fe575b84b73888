// SPDX-License-Identifier: Apache-2.0
// The acquisition of Lock, NonReentrantLock and FencedLock as one record per acquisition, in
// both handoff modes: what its attempt, recheck, settle, undo and give-up steps share (the
// Client, kind, name, owner, lease, the starvation guard's or grant link's state) is kept once,
// and each step's request is built when it is sent. A sleeping waiter holds this record and its
// loop, nothing per step (issue 34: a waiter's bytes; before, each step was a closure with its own
// copy of the name, owner field, keys and arguments).
#include "sync/locks/hash_lock_steps.h"

#include <cstdlib>
#include <optional>
#include <utility>

#include "lua/scripts.h"
#include "sync/acquire/grant.h"
#include "sync/identity.h"
#include "sync/locks/starvation_guard.h"

namespace redisync::detail {

std::string fenced_token_key(const std::string& name) {
  return "redisson_lock_token:" + sync::hash_tag(name);
}

std::string HashLockSteps::channel() const { return lock_channel(name_); }

std::function<void(HashLockSteps::Done)> HashLockSteps::found_step() {
  if (!token_) return nullptr;
  return [core = core_, key = fenced_token_key(name_), token = token_](Done cb) {
    core->executor().execute(
        {"GET", key},
        [cb, token](std::exception_ptr error, net::Reply reply) {
          if (!error && reply.is_string()) {
            *token = std::strtoull(reply.str.c_str(), nullptr, 10);
            return cb(nullptr, {true, 0});
          }
          cb(error ? error
                   : std::make_exception_ptr(
                         ServerError("redisync: fencing token unreadable after a retried acquire",
                                     reply.to_string())),
             {});
        },
        net::Retry::always);
  };
}

long long HashLockSteps::take_token(const net::Reply& reply) {
  if (!two_integers(reply)) throw unexpected_reply(reply);
  const long long code = reply.elements[0].integer;
  if (code == -1 || code == -3) *token_ = static_cast<std::uint64_t>(reply.elements[1].integer);
  return code;
}

namespace {

// Wake mode (and an owner's re-entry in grant mode): lock_acquire.lua, or the kind's step in
// its place, with the starvation guard's key and claim when the guard is on.
class GuardedLockSteps final : public HashLockSteps {
 public:
  GuardedLockSteps(std::shared_ptr<ClientCore> core, KindPtr kind, std::string name,
                   std::int64_t owner, Duration lease, const lua::Script& step,
                   HashLockVariant variant)
      : HashLockSteps(std::move(core), std::move(kind), std::move(name), owner, lease,
                      std::move(variant)),
        script_(&publish_guarded(*core_, step)) {
    if (const Duration after = starvation_guard_after(*core_); after > Duration{0}) {
      guard_.emplace(after);
    }
  }

  void give_up() override {
    if (guard_) guard_->give_up(*core_, lock_guard_key(name_), core_->owner_field(owner_));
  }

  const lua::Script& script() const override { return *script_; }
  std::vector<std::string> keys() const override {
    std::vector<std::string> keys{name_};
    if (fenced_) keys.push_back(fenced_token_key(name_));  // KEYS[2] of the fenced step
    if (guard_) keys.push_back(lock_guard_key(name_));     // the guard's claim key, last
    return keys;
  }
  std::vector<std::string> args() override {
    std::vector<std::string> args{std::to_string(lease_.count()), core_->owner_field(owner_)};
    std::size_t claim_at = args.size();
    if (fenced_) {
      args.push_back(token_ ? "1" : "0");  // ARGV[3]: acquire-with-token (§11)
      ++claim_at;
    }
    // The claim's two arguments: Lock's step always takes them, FencedLock's with the guard.
    if (!fenced_ || guard_) args.insert(args.end(), {"0", "0"});
    if (guard_) args = guard_->args(std::move(args), claim_at);
    // Refused before any write when this user may not publish the release's message.
    return publish_guarded_args(*core_, std::move(args), lock_channel(name_), name_);
  }
  sync::AttemptResult parse(const net::Reply& reply) override {
    sync::AttemptResult result;
    if (token_) {
      // Acquire-with-token: {-1, token} or {PTTL, -1}.
      const long long ttl = take_token(reply);
      result = ttl == -1 ? sync::AttemptResult{true, 0} : sync::AttemptResult{false, ttl};
    } else {
      result = parse_nil_or_ttl(reply);
    }
    return guard_ ? guard_->parse(result) : result;
  }

 private:
  const lua::Script* script_;             // the kind's step behind the publish guard
  std::optional<StarvationGuard> guard_;  // set when Config::starvation_guard is on
};

// Grant mode (docs/wire-format.md §18): lock_grant_acquire.lua, which registers the waiter and
// takes the grant made to it; its give-up leaves the registration and passes a grant on.
class GrantLockSteps final : public HashLockSteps {
 public:
  GrantLockSteps(std::shared_ptr<ClientCore> core, KindPtr kind, std::string name,
                 std::int64_t owner, Duration lease,
                 std::optional<sync::Clock::time_point> deadline,
                 std::shared_ptr<sync::GrantLink> link, HashLockVariant variant)
      : HashLockSteps(std::move(core), std::move(kind), std::move(name), owner, lease,
                      std::move(variant)),
        script_(&publish_guarded(*core_, lua::lock_grant_acquire)),
        deadline_(deadline),
        link_(std::move(link)) {
    if (token_) {  // a grant message carries the token issued with the grant
      link_->on_grant = [token = token_](const std::string& rest) {
        *token = std::strtoull(rest.c_str(), nullptr, 10);
      };
    }
  }

  void give_up() override {
    grant_give_up(core_, link_, name_, fenced_ ? fenced_token_key(name_) : "")();
  }

  const lua::Script& script() const override { return *script_; }
  std::vector<std::string> keys() const override {
    std::vector<std::string> keys = lock_grant_keys(name_);
    if (fenced_) keys.push_back(fenced_token_key(name_));  // KEYS[5] of the grant step
    return keys;
  }
  std::vector<std::string> args() override {
    auto args = grant_attempt_args(*link_, std::to_string(lease_.count()),
                                   core_->owner_field(owner_), deadline_);
    args.push_back(token_ ? "1" : "0");  // acquire-with-token (§11)
    // A hold of the owner found that is not its grant: NON_REENTRANT_REACQUIRE (§12).
    args.push_back(refuse_reentry_ ? "1" : "0");
    // Refused before any write when this user may not publish the release's message.
    return publish_guarded_args(*core_, std::move(args), lock_channel(name_), name_);
  }
  sync::AttemptResult parse(const net::Reply& reply) override {
    if (!token_) return read_grant_reply(*link_, reply);
    // With a token: {-1, token} acquired, {-3, token} took a grant, {PTTL, -1} refused.
    const long long code = take_token(reply);
    if (code == -1 || code == -3) return sync::AttemptResult{true, 0};
    link_->refused();
    return sync::AttemptResult{false, link_->cap_wait(code)};
  }

 protected:
  const sync::GrantLink* grant_link() const override { return link_.get(); }

 private:
  const lua::Script* script_;  // lock_grant_acquire.lua behind the publish guard
  std::optional<sync::Clock::time_point> deadline_;
  std::shared_ptr<sync::GrantLink> link_;
};

}  // namespace

std::shared_ptr<HashLockSteps> guarded_lock_steps(const std::shared_ptr<ClientCore>& core,
                                                  const KindPtr& kind, const std::string& name,
                                                  std::int64_t owner, Duration lease,
                                                  const lua::Script& step,
                                                  HashLockVariant variant) {
  return std::make_shared<GuardedLockSteps>(core, kind, name, owner, lease, step,
                                            std::move(variant));
}

std::shared_ptr<HashLockSteps> grant_lock_steps(const std::shared_ptr<ClientCore>& core,
                                                const KindPtr& kind, const std::string& name,
                                                std::int64_t owner, Duration lease,
                                                std::optional<sync::Clock::time_point> deadline,
                                                std::shared_ptr<sync::GrantLink> link,
                                                HashLockVariant variant) {
  return std::make_shared<GrantLockSteps>(core, kind, name, owner, lease, deadline, std::move(link),
                                          std::move(variant));
}

void start_guarded_lock_loop(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                             const std::string& name, std::int64_t owner, LoopStart start,
                             const lua::Script& step, HashLockVariant variant) {
  auto steps = guarded_lock_steps(core, kind, name, owner, start.lease, step, std::move(variant));
  start_pubsub_loop(core, std::move(start), std::move(steps));
}

void start_lock_grant_loop(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                           const std::string& name, std::int64_t owner, LoopStart start,
                           std::shared_ptr<sync::GrantLink> link, HashLockVariant variant) {
  auto steps = grant_lock_steps(core, kind, name, owner, start.lease, start.deadline, link,
                                std::move(variant));
  start_pubsub_loop(core, std::move(start), std::move(steps), std::move(link));
}

}  // namespace redisync::detail
