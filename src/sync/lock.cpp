// redisync::Lock: Redisson's reentrant RLock (wire spec §2, §3, §13).
#include "redisync/lock.h"

#include <charconv>
#include <iostream>

#include "lua/scripts.h"
#include "sync/acquire_loop.h"
#include "sync/client_core.h"
#include "sync/durations.h"
#include "sync/identity.h"
#include "sync/lock_kind.h"

namespace redisync {

namespace {

// Shared with the other lock kinds (sync/lock_kind.h).
using detail::lock_channel;
using detail::lock_message_policy;
using detail::outcome_error;
using detail::query;

std::string describe_lock(const detail::ClientCore& core, const std::string& name) {
  return "lock '" + name + "' on " + core.config().describe();
}

void check_name(const std::string& name) {
  if (name.empty()) throw InvalidArgument("redisync: lock name must not be empty");
}

std::string release_record_key(const std::string& name) {
  return "redisson_unlock_latch:" + sync::hash_tag(name) + ":" + sync::random_request_id();
}

// Drops the one hold an unacknowledged acquire just added (its release record expires alone).
void undo_acquire(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  const std::string& field, Duration lease, std::function<void()> then) {
  core->executor().eval(
      lua::lock_release, {name, lock_channel(name), release_record_key(name)},
      {"0", std::to_string(lease.count()), field, std::to_string(core->release_record_ttl_ms()),
       core->publish_command(), "1"},
      [then = std::move(then)](std::exception_ptr, net::Reply) { then(); }, net::Retry::always);
}

}  // namespace

namespace detail {

asio::io_context& io_of(const std::shared_ptr<ClientCore>& core) { return core->io(); }

void start_lock_acquire(const std::shared_ptr<ClientCore>& core, const std::string& name,
                        std::int64_t owner, Duration lease, Duration wait,
                        std::function<void(std::exception_ptr, bool)> done) {
  asio::post(core->io(), [core, name, owner, lease, wait, done = std::move(done)]() mutable {
    if (lease > max_duration) {  // async callers reach here unchecked; nothing written yet
      return done(too_long_lease(lease, "lock '" + name + "'"), false);
    }
    const bool watchdog = lease <= Duration{0};
    const Duration effective = watchdog ? core->config().lock_watchdog_timeout : lease;
    const std::string field = core->owner_field(owner);
    const std::string what = describe_lock(*core, name);

    sync::AcquireLoop::Params params;
    params.channel = lock_channel(name);
    params.policy = lock_message_policy;
    if (wait >= Duration{0}) params.deadline = sync::Clock::now() + wait;
    // A waiter that has waited longer than starvation_guard claims the next turn (see
    // lock_acquire.lua); the claim lasts a few guard periods and is renewed by each attempt.
    const auto started = sync::Clock::now();
    // Not in a cluster: a second key makes the acquire a multi-key script, which Redis
    // refuses (TRYAGAIN) while the lock's slot is being migrated.
    const Duration guard_after = core->config().topology == Topology::cluster
                                     ? Duration{0}
                                     : core->config().starvation_guard;
    const bool guarded = guard_after > Duration{0};
    // Built once per acquire, and only when the guard is on (the uncontended path is hot).
    std::vector<std::string> keys{name};
    std::string claim_ms = "0";
    if (guarded) {
      keys.push_back("redisync_lock_guard:" + sync::hash_tag(name));
      claim_ms = std::to_string(std::max<long long>(5 * guard_after.count(), 100));
    }
    params.attempt = [core, name, field, effective, what, started, guard_after, guarded, keys,
                      claim_ms](sync::AcquireLoop::AttemptDone cb) {
      const bool claim = guarded && sync::Clock::now() - started >= guard_after;
      core->executor().eval_acked(
          lua::lock_acquire, keys,
          {std::to_string(effective.count()), field, claim ? "1" : "0", claim_ms},
          [core, name, field, effective, cb, what, claim, guard_after](
              std::exception_ptr error, net::Reply reply, int acked) {
            if (error) return cb(error, {});
            if (reply.is_nil() && acked == 0) {
              // No replica has the lock: a failover now would lose it. Undo this hold and
              // report a retryable timeout (spec §1.7); the loop tries again.
              auto timeout = std::make_exception_ptr(TimeoutError(
                  "redisync: " + what + ": no replica acknowledged the acquire within " +
                  std::to_string(core->config().slaves_sync_timeout.count()) +
                  " ms (WAIT); the hold was rolled back"));
              return undo_acquire(core, name, field, effective, [cb, timeout] { cb(timeout, {}); });
            }
            if (reply.is_nil()) return cb(nullptr, {true, 0});
            if (reply.is_integer()) {
              // A claimant re-tries every quarter guard period rather than only on a release
              // message: the message may wake another waiter of this process instead (one
              // waiter per process per release), which the claim turns away.
              long long ttl = reply.integer;
              if (claim) {
                const long long poll = std::max<long long>(guard_after.count() / 4, 1);
                ttl = ttl < 0 ? poll : std::min(ttl, poll);
              }
              return cb(nullptr, {false, ttl});
            }
            std::exception_ptr server_error;
            try {
              net::throw_server_error(reply, "acquiring " + what);
            } catch (...) {
              server_error = std::current_exception();
            }
            // Outside the handler: the loop's continuation must not run inside a catch block.
            cb(server_error, {});
          },
          net::Retry::never);  // the acquire loop retries; one layer of retries only
    };
    // After a timeout or a dropped connection the attempt may have run: the owner's hold
    // count on the server tells (only this owner ever changes its own field).
    params.recheck = [core, name, owner, field, attempt = params.attempt](
                         sync::AcquireLoop::AttemptDone cb) {
      auto it = core->holds().find({name, owner});
      const long long local = it == core->holds().end() || it->second.lost ? 0 : it->second.count;
      core->executor().execute(
          {"HGET", name, field},
          [cb, attempt, local](std::exception_ptr error, net::Reply reply) {
            long long count = -1;
            if (!error && reply.is_string()) {
              std::from_chars(reply.str.data(), reply.str.data() + reply.str.size(), count);
            }
            if (count == local + 1) {
              return cb(nullptr, {true, 0});
            }
            attempt(cb);
          },
          net::Retry::never);
    };
    params.retry_attempts = core->config().retry_attempts;
    params.retry_interval = core->config().retry_interval;
    auto finished = [core, name, owner, field, watchdog, effective, done](
                        std::exception_ptr error, bool acquired) {
      if (!error && acquired) {
        auto& hold = core->holds()[{name, owner}];
        if (hold.lost) hold = Hold{};  // a new hold after a lost one starts afresh
        ++hold.count;
        hold.lease = effective;
        hold.watchdog = hold.watchdog || watchdog;
        const auto sent = sync::deciding_attempt_sent().value_or(sync::Clock::now());
        if (watchdog) {
          core->watchdog().add(sync::RenewalKey{name, field}, sync::RenewalKey{name, field}, sent);
        } else {
          core->watchdog().watch(sync::RenewalKey{name, field}, sync::RenewalKey{name, field},
                                 effective, sent);
        }
      }
      done(error, acquired);
    };
    sync::AcquireLoop::start(core->executor(), std::move(params), std::move(finished));
  });
}

namespace {

// Runs the release step; `done` gets the outcome (and, for `failed`, the error).
void release_step(const std::shared_ptr<ClientCore>& core, const std::string& name,
                  std::int64_t owner,
                  std::function<void(ReleaseOutcome, std::exception_ptr)> done) {
  asio::post(core->io(), [core, name, owner, done = std::move(done)] {
    const std::string field = core->owner_field(owner);
    auto hold_it = core->holds().find({name, owner});
    const Duration lease = hold_it != core->holds().end() && hold_it->second.lease.count() > 0
                               ? hold_it->second.lease
                               : core->config().lock_watchdog_timeout;
    const std::string record = release_record_key(name);
    // The release record makes a resend after a dropped connection safe (spec §1.8).
    detail::HoldRef hold;  // only the field matters to the step
    hold.field = field;
    detail::acked_release(
        core, hold, lua::lock_release, {name, lock_channel(name), record},
        {"0", std::to_string(lease.count()), field,
         std::to_string(core->release_record_ttl_ms()), core->publish_command(), "1"},
        [core, name, owner, field, record, done](std::exception_ptr error, net::Reply reply) {
          if (!error && reply.is_error()) {
            try {
              net::throw_server_error(reply, "releasing " + describe_lock(*core, name));
            } catch (...) {
              error = std::current_exception();
            }
          }
          if (error) return done(ReleaseOutcome::failed, error);
          core->release_records().add(record);
          auto& holds = core->holds();
          auto it = holds.find({name, owner});
          if (reply.is_nil()) {
            // Not the owner on the server. If we believed we held it, it was lost.
            const bool was_held = it != holds.end() && it->second.count > 0;
            if (it != holds.end()) holds.erase(it);
            core->watchdog().forget(name, field);
            return done(was_held ? ReleaseOutcome::lost : ReleaseOutcome::not_held, nullptr);
          }
          core->watchdog().remove(name, field);
          if (reply.integer == 0) {
            if (it != holds.end() && --it->second.count <= 0) holds.erase(it);
            return done(ReleaseOutcome::still_held, nullptr);
          }
          if (it != holds.end()) holds.erase(it);
          core->watchdog().forget(name, field);
          done(ReleaseOutcome::released, nullptr);
        });
  });
}

}  // namespace

void start_lock_release(const std::shared_ptr<ClientCore>& core, const std::string& name,
                        std::int64_t owner, std::function<void(std::exception_ptr)> done) {
  const std::string what = describe_lock(*core, name);
  release_step(core, name, owner,
               [done, what, owner](ReleaseOutcome outcome, std::exception_ptr error) {
                 done(error ? error : outcome_error(outcome, what, owner));
               });
}

}  // namespace detail

Lock::Lock(std::shared_ptr<detail::ClientCore> core, std::string name)
    : core_(std::move(core)), name_(std::move(name)) {
  check_name(name_);
  sync::check_cluster_name(core_->config().topology == Topology::cluster, name_, "lock");
}

std::string Lock::owner_field(std::int64_t owner) const { return core_->owner_field(owner); }

void Lock::lock() {
  const auto owner = sync::thread_owner_id();
  core_->call<bool>([&](auto done) {
    detail::start_lock_acquire(core_, name_, owner, Duration{0}, Duration{-1}, done);
  });
}

void Lock::lock(Duration lease) {
  sync::check_lease(lease, "lease for lock '" + name_ + "'");
  const auto owner = sync::thread_owner_id();
  core_->call<bool>([&](auto done) {
    detail::start_lock_acquire(core_, name_, owner, lease, Duration{-1}, done);
  });
}

bool Lock::try_lock() { return try_acquire(Duration{0}, Duration{0}); }

bool Lock::try_lock_for(Duration wait, Duration lease) {
  sync::check_lease(lease, "lease for lock '" + name_ + "'");
  return try_acquire(detail::clamp_wait(wait), lease);
}

bool Lock::try_acquire(Duration wait, Duration lease) {
  const auto owner = sync::thread_owner_id();
  return core_->call<bool>([&](auto done) {
    detail::start_lock_acquire(core_, name_, owner, lease, wait, done);
  });
}

ReleaseResult Lock::release() noexcept {
  try {
    const auto owner = sync::thread_owner_id();
    auto outcome = core_->call<int>([&](auto done) {
      detail::release_step(core_, name_, owner,
                           [done](ReleaseOutcome o, std::exception_ptr e) {
                             done(e, static_cast<int>(o));
                           });
    });
    return ReleaseResult{static_cast<ReleaseOutcome>(outcome), {}};
  } catch (const std::exception& e) {
    return ReleaseResult{ReleaseOutcome::failed, e.what()};
  } catch (...) {
    return ReleaseResult{ReleaseOutcome::failed, "unknown error"};
  }
}

void Lock::unlock() noexcept {
  std::string what = name_;
  try {
    what = describe_lock(*core_, name_);
    const auto owner = sync::thread_owner_id();
    core_->call<bool>([&](auto done) {
      asio::post(core_->io(), [core = core_, name = name_, owner, what, done] {
        detail::quiet_unlock(
            core, name, owner, sync::RenewalKey{name, core->owner_field(owner)}, what,
            [core, name, owner](detail::ReleaseDone d) {
              detail::release_step(core, name, owner, std::move(d));
            },
            [done] { done(nullptr, true); });
      });
    });
  } catch (const std::exception& e) {
    detail::log_quiet_unlock(what, e.what());
  } catch (...) {
    detail::log_quiet_unlock(what, "unknown error");
  }
}

void Lock::unlock_checked() {
  const auto owner = sync::thread_owner_id();
  core_->call<bool>([&](auto done) {
    detail::start_lock_release(core_, name_, owner,
                               [done](std::exception_ptr e) { done(e, true); });
  });
}

bool Lock::force_unlock() {
  return core_->call<bool>([&](auto done) {
    auto core = core_;
    auto name = name_;
    core->executor().eval(
        lua::lock_force_release, {name, lock_channel(name)}, {"0", core->publish_command(), "1"},
        [core, name, done](std::exception_ptr error, net::Reply reply) {
          if (!error && reply.is_error()) {
            try {
              net::throw_server_error(reply, "force-unlocking " + describe_lock(*core, name));
            } catch (...) {
              error = std::current_exception();
            }
          }
          if (error) return done(error, false);
          core->watchdog().remove_all(name);
          for (auto it = core->holds().begin(); it != core->holds().end();) {
            it = it->first.first == name ? core->holds().erase(it) : std::next(it);
          }
          done(nullptr, reply.integer == 1);
        },
        net::Retry::always);
  });
}

namespace {

}  // namespace

bool Lock::is_locked() const {
  return query(core_, {"EXISTS", name_}, "querying " + describe_lock(*core_, name_)).integer == 1;
}

bool Lock::is_held_by_current_thread() const { return is_held_by_thread(sync::thread_owner_id()); }

bool Lock::is_held_by_thread(std::int64_t owner) const {
  if (detail::known_lost(core_, name_, owner)) return false;  // reported lost: not held
  return query(core_, {"HEXISTS", name_, core_->owner_field(owner)},
               "querying " + describe_lock(*core_, name_))
             .integer == 1;
}

int Lock::hold_count() const {
  const auto owner = sync::thread_owner_id();
  auto r = query(core_, {"HGET", name_, core_->owner_field(owner)},
                 "querying " + describe_lock(*core_, name_));
  return r.is_nil() ? 0 : std::stoi(r.str);
}

Duration Lock::remaining_lease() const {
  return Duration{
      query(core_, {"PTTL", name_}, "querying " + describe_lock(*core_, name_)).integer};
}

}  // namespace redisync
