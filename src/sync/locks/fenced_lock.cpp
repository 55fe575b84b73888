// SPDX-License-Identifier: Apache-2.0
// redisync::FencedLock: Redisson's fenced lock (docs/wire-format.md §11).
#include "redisync/fenced_lock.h"

#include <cstdlib>

#include "lua/scripts.h"
#include "lua/with_preludes.h"
#include "net/server_text.h"
#include "sync/identity.h"
#include "sync/locks/lock_kind.h"
#include "sync/locks/starvation_guard.h"

namespace redisync {

namespace {

std::string token_key(const std::string& name) {
  return "redisson_lock_token:" + sync::hash_tag(name);
}

class FencedKind final : public detail::HashLockKind {
 public:
  std::string noun() const override { return "fenced lock"; }

  /// The acquire loop; with `token` set, the step is acquire-with-token and the token of the
  /// successful attempt is stored there.
  void start_token_loop(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                        std::int64_t owner, detail::LoopStart start,
                        std::shared_ptr<std::optional<std::uint64_t>> token) const {
    const Duration effective_lease = start.lease;
    const auto deadline = start.deadline;
    detail::ReplyParser parse;  // ordinary acquire: nil / PTTL
    if (token) {
      // Acquire-with-token: {-1, token} or {PTTL, -1}.
      parse = [token](const net::Reply& reply) -> sync::AttemptResult {
        if (!detail::two_integers(reply)) throw detail::unexpected_reply(reply);
        const long long ttl = reply.elements[0].integer;
        if (ttl != -1) return {false, ttl};
        *token = static_cast<std::uint64_t>(reply.elements[1].integer);
        return {true, 0};
      };
    }
    const auto self = shared_from_this();
    auto link = detail::grant_link(core, *this, name, owner);
    if (link) {
      // Grant mode (sync/acquire/grant.h): -3 / {-3, token} = took a grant (token issued at it).
      parse = [link, token, plain = detail::grant_parse(link)](const net::Reply& reply) {
        if (!token) return plain(reply);
        if (!detail::two_integers(reply)) throw detail::unexpected_reply(reply);
        const long long code = reply.elements[0].integer;
        if (code == -1 || code == -3) {
          *token = static_cast<std::uint64_t>(reply.elements[1].integer);
          return sync::AttemptResult{true, 0};
        }
        link->refused();
        return sync::AttemptResult{false, link->cap_wait(code)};
      };
      if (token) {
        link->on_grant = [token](const std::string& rest) {
          *token = std::strtoull(rest.c_str(), nullptr, 10);
        };
      }
    }
    const std::string field = core->owner_field(owner);
    const std::string lease = std::to_string(effective_lease.count());
    const std::string with_token = token ? "1" : "0";
    detail::ArgsFn args =
        link ? detail::ArgsFn([link, lease, field, with_token, deadline] {
          auto step = detail::grant_attempt_args(*link, lease, field, deadline);
          step.push_back(with_token);
          step.push_back("0");  // reentrant
          return step;
        })
             : detail::fixed_args({lease, field, with_token});
    // Wake mode: the starvation guard, as Lock's (sync/locks/starvation_guard.h): the chaos
    // suite's slow-network case saw a fenced waiter lose every race for 4 s. Grant mode has
    // none (a registered waiter is granted the lock in turn).
    std::vector<std::string> wake_keys{name, token_key(name)};
    std::function<void()> give_up;
    const Duration after = link ? Duration{0} : detail::starvation_guard_after(*core);
    if (after > Duration{0}) {
      auto guard = std::make_shared<detail::StarvationGuard>(after);
      wake_keys.push_back(detail::lock_guard_key(name));
      give_up = detail::starvation_guard_drop(core, guard, wake_keys.back(), field);
      args = [guard, fixed = std::vector<std::string>{lease, field, with_token, "0", "0"}] {
        return guard->args(fixed, 3);  // ARGV[4..5]
      };
      parse = [guard, plain = parse ? std::move(parse) : detail::ReplyParser(
                                                              detail::parse_nil_or_ttl)](
                  const net::Reply& reply) { return guard->parse(plain(reply)); };
    }
    auto attempt = detail::script_attempt(
        core,
        detail::publish_guarded(*core, link ? lua::with_preludes<lua::lock_grant_acquire,
                                                                  lua::grant_pass_on>()
                                             : lua::fenced_lock_acquire),
        link ? [&] {
          auto keys = detail::lock_grant_keys(name);
          keys.push_back(token_key(name));
          return keys;
        }()
             : std::move(wake_keys),
        // Refused before any write when this user may not publish the release's message.
        detail::publish_guarded_args(*core, std::move(args), detail::lock_channel(name), name),
        describe(*core, name), std::move(parse),
        detail::release_undo(core, self, name, owner, effective_lease));
    // An acquisition found by the recheck got the token the counter holds now: nobody else
    // can have acquired since (we hold it), and our own re-entries are not in flight.
    std::function<void(sync::AcquireLoop::AttemptDone)> read_token;
    if (token) {
      read_token = [core, name, token](sync::AcquireLoop::AttemptDone cb) {
        core->executor().execute(
            {"GET", token_key(name)},
            [cb, token](std::exception_ptr error, net::Reply reply) {
              if (!error && reply.is_string()) {
                *token = std::strtoull(reply.str.c_str(), nullptr, 10);
                return cb(nullptr, {true, 0});
              }
              cb(error ? error
                       : std::make_exception_ptr(ServerError(
                             "redisync: fencing token unreadable after a retried acquire",
                             reply.to_string())),
                 {});
            },
            net::Retry::always);
      };
    }
    auto recheck = detail::hold_count_recheck(core, self, name, owner, attempt, read_token);
    if (link) give_up = detail::grant_give_up(core, link, name, token_key(name));
    detail::start_pubsub_loop(core, detail::lock_channel(name), std::move(start),
                              std::move(attempt), std::move(give_up), std::move(recheck),
                              detail::hold_count_check(core, self, name, owner, read_token), link);
  }

  void release_step(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                    const detail::HoldRef& hold, Duration lease, const std::string& record,
                    net::ReplyHandler handler) const override {
    if (core->config().handoff != Handoff::grant) {
      return HashLockKind::release_step(core, name, hold, lease, record, std::move(handler));
    }
    detail::grant_release_step(core, name, hold, lease, record, token_key(name),
                               std::move(handler));
  }

  void start_loop(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  std::int64_t owner, detail::LoopStart start) const override {
    start_token_loop(core, name, owner, std::move(start), nullptr);
  }

};

}  // namespace

FencedLock::FencedLock(std::shared_ptr<detail::ClientCore> core, std::string name)
    : BasicLock(std::move(core), std::move(name), detail::shared_kind<FencedKind>()) {}

void FencedLock::start_token_acquire(std::int64_t owner, Duration lease, Duration wait,
                                     TokenDone done,
                                     std::shared_ptr<detail::CancelSignal> cancel) const {
  auto token = std::make_shared<std::optional<std::uint64_t>>();
  auto kind = std::static_pointer_cast<const FencedKind>(kind_);
  detail::run_acquire(
      core_, kind_, name_, owner, lease, wait,
      [token, done](std::exception_ptr error, bool acquired) {
        done(error, acquired ? *token : std::nullopt);
      },
      [core = core_, name = name_, owner, token, kind](detail::LoopStart start) {
        kind->start_token_loop(core, name, owner, std::move(start), token);
      },
      std::move(cancel));
}

std::optional<std::uint64_t> FencedLock::acquire_token(Duration wait, Duration lease) {
  const auto owner = sync::thread_owner_id();
  return core_->call<std::optional<std::uint64_t>>(
      [&](auto done) { start_token_acquire(owner, lease, wait, done); });
}

std::uint64_t FencedLock::lock_and_get_token() {
  return acquire_token(Duration{-1}, Duration{0}).value_or(0);
}

std::uint64_t FencedLock::lock_and_get_token(Duration lease) {
  check_lease(lease);
  return acquire_token(Duration{-1}, lease).value_or(0);
}

std::optional<std::uint64_t> FencedLock::try_lock_and_get_token_for(Duration wait) {
  return acquire_token(detail::clamp_wait(wait), Duration{0});
}

std::optional<std::uint64_t> FencedLock::try_lock_and_get_token_for(Duration wait, Duration lease) {
  check_lease(lease);
  return acquire_token(detail::clamp_wait(wait), lease);
}

std::uint64_t FencedLock::token() const {
  const std::string key = token_key(name_);
  const std::string what = "reading the token of " + kind_->describe(*core_, name_);
  return net::stored_number<std::uint64_t>(detail::query(core_, {"GET", key}, what), what,
                                           "key '" + key + "'");
}

}  // namespace redisync
