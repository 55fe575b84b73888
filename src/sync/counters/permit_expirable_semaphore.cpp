// SPDX-License-Identifier: Apache-2.0
// redisync::PermitExpirableSemaphore: Redisson's RPermitExpirableSemaphore (docs/wire-format.md §8, §13).
#include "redisync/permit_expirable_semaphore.h"

#include <set>

#include "lua/scripts.h"
#include "redisync/semaphore.h"
#include "sync/acquire/acquire_loop.h"
#include "sync/acquire/acquire_record.h"
#include "sync/client_core.h"
#include "sync/counters/counts.h"
#include "sync/identity.h"
#include "sync/metrics_report.h"
#include "sync/counters/permit_expirable_semaphore_ids.h"
#include "sync/counters/permit_expirable_semaphore_script.h"
#include "sync/counters/permit_lease_watch.h"
#include "sync/hold/recorded_step.h"
#include "sync/counters/semaphore_acquire.h"
#include "sync/counters/semaphore_gate.h"

namespace redisync {

namespace {

using detail::check_count;
using detail::check_lease;
using detail::describe_pes;
using detail::lease_arg;
using detail::lost_permit;
using detail::pes_args;
using detail::pes_keys;
using detail::run_script;
using detail::settle_permit;
using detail::timeout_key;
using detail::unknown_permit;
using detail::watch_permit;

}  // namespace

namespace detail {

void check_permit_args(const std::string& name, std::int64_t permits, Duration lease) {
  if (permits < 1 || permits > PermitExpirableSemaphore::kMaxPermitsPerAcquire) {
    throw InvalidArgument("redisync: permits to acquire from permit-expirable semaphore '" +
                          name + "' must be >= 1 and <= " +
                          std::to_string(PermitExpirableSemaphore::kMaxPermitsPerAcquire) +
                          " (got " + std::to_string(permits) + "; each permit gets an id)");
  }
  check_lease(name, lease);
}

void start_permit_acquire(const std::shared_ptr<ClientCore>& core, const std::string& name,
                          std::int64_t permits, Duration lease, Duration wait,
                          std::function<void(std::exception_ptr, std::vector<std::string>)> on_done,
                          std::shared_ptr<CancelSignal> cancel) {
  check_permit_args(name, permits, lease);
  // The ids are chosen once; every attempt offers the same ones.
  auto raw_ids = std::make_shared<std::vector<std::string>>();
  for (std::int64_t i = 0; i < permits; ++i) raw_ids->push_back(sync::random_permit_id());
  // The send time of the attempt that took the permits (their local deadline counts from it).
  auto sent = std::make_shared<std::optional<sync::Clock::time_point>>();
  core->post_start(
      std::move(on_done), [](auto& late) { late(detail::ClientCore::closed_error(), {}); },
      [core, name, raw_ids, lease, wait, sent, cancel = std::move(cancel)](auto done) mutable {
        const auto deadline = sync::deadline_after(wait);
        // Measured from here (the wait includes the local gate's), with a Metrics hook.
        auto meter = start_acquire_meter(*core, "permit expirable semaphore", name);
        const std::string what = "acquiring " + describe_pes(*core, name);
        sync::SemaphoreAcquire acquire;
        acquire.name = name;
        acquire.gate_key = "permit_expirable_semaphore:" + name;
        // As Semaphore's (issue 23); a recheck can tell whether an attempt ran even after its
        // permits expired.
        acquire.record_prefix = "redisync_permit_request";
        acquire.permits = static_cast<std::int64_t>(raw_ids->size());
        acquire.deadline = deadline;
        acquire.probe = probe_of(meter);
        acquire.sent = sent;
        acquire.cancel = std::move(cancel);
        acquire.attempt = [core, name, raw_ids, lease, what](const std::string& record,
                                                             const std::string& record_ttl,
                                                             sync::AcquireLoop::AttemptDone cb) {
          auto keys = pes_keys(name);
          keys.push_back(record);
          auto args = pes_args(*core, {std::to_string(raw_ids->size()), lease_arg(lease)});
          args.insert(args.end(), raw_ids->begin(), raw_ids->end());
          args.push_back(record_ttl);
          core->executor().eval(
              lua::permit_expirable_semaphore_acquire, std::move(keys),
              std::move(args),
              [cb, what](std::exception_ptr error, net::Reply reply) {
                if (!error && reply.is_error()) error = net::server_error(reply, what);
                if (error) return cb(error, {});
                // Not enough permits: wait for a message, or at most until the earliest lease
                // ends (then this retry reclaims that permit).
                cb(nullptr, sync::decode_acquire_reply(reply));
              },
              net::Retry::never);  // the loop resends, after a recheck
        };
        sync::start_semaphore_acquire_loop(core, std::move(acquire),
                                           [core, name, raw_ids, lease, sent, meter, done](
                                               std::exception_ptr error, bool acquired) {
                                             if (meter) {
                                               metrics_acquired(meter, error, acquired, nullptr);
                                               if (!error && acquired)
                                                 metered_permits_taken(*core, name, *raw_ids,
                                                                       lease);
                                             }
                                             std::vector<std::string> ids;
                                             if (!error && acquired) {
                                               const auto at = sent->value_or(sync::Clock::now());
                                               for (const auto& raw : *raw_ids) {
                                                 watch_permit(*core, name, raw, lease, at);
                                                 ids.push_back(sync::permit_id_to_hex(raw));
                                               }
                                             }
                                             done(error, std::move(ids));
                                           });
      });
}

namespace {

// What a single-id release found.
enum class PermitRelease { released, unknown, lost };

// Runs the single-id release step; `done(error, outcome)` (outcome unused with an error).
void release_one(const std::shared_ptr<ClientCore>& core, const std::string& name,
                 const std::string& raw,
                 std::function<void(std::exception_ptr, PermitRelease)> on_done) {
  core->post_start(
      std::move(on_done),
      [](auto& late) { late(detail::ClientCore::closed_error(), PermitRelease::unknown); },
      [core, name, raw](auto done) mutable {
        const std::string what = "releasing a permit of " + describe_pes(*core, name);
        core->executor().eval(
            lua::permit_expirable_semaphore_release, pes_keys(name),
            pes_args(*core, {raw}),
            [core, name, raw, done, what](std::exception_ptr error, net::Reply reply) {
              if (!error && reply.is_error()) error = net::server_error(reply, what);
              // Not resent after a lost reply: a resend could not tell its own release from an
              // expired lease. The error says it may have run (the deadline stays watched).
              error = sync::note_may_have_run(error, what);
              if (error) return done(error, PermitRelease::unknown);
              const bool released = reply.integer == 1;
              metered_permit_released(*core, name, raw, released);
              const bool lost = settle_permit(*core, name, raw, released);
              done(nullptr, released ? PermitRelease::released
                                     : (lost ? PermitRelease::lost : PermitRelease::unknown));
            });
      });
}

}  // namespace

void start_permit_release(const std::shared_ptr<ClientCore>& core, const std::string& name,
                          const std::string& id, std::function<void(std::exception_ptr)> done) {
  const std::string raw = sync::permit_id_from_hex(id, name);  // InvalidArgument: thrown here
  release_one(core, name, raw,
              [core, name, id, done](std::exception_ptr error, PermitRelease outcome) {
                if (!error && outcome == PermitRelease::lost) error = lost_permit(id, *core, name);
                if (!error && outcome == PermitRelease::unknown) {
                  error = unknown_permit(id, *core, name);
                }
                done(error);
              });
}

}  // namespace detail

PermitExpirableSemaphore::PermitExpirableSemaphore(std::shared_ptr<detail::ClientCore> core,
                                                   std::string name)
    : core_(std::move(core)), name_(std::move(name)) {
  if (name_.empty()) {
    throw InvalidArgument("redisync: permit-expirable semaphore name must not be empty");
  }
  sync::check_cluster_name(core_->config().topology == Topology::cluster, name_,
                           "permit-expirable semaphore");
}

std::string PermitExpirableSemaphore::acquire(Duration lease) {
  return acquire(1, lease).front();
}

std::vector<std::string> PermitExpirableSemaphore::acquire(std::int64_t permits, Duration lease) {
  detail::check_permit_args(name_, permits, lease);
  return core_->call<std::vector<std::string>>([&](auto done) {
    detail::start_permit_acquire(core_, name_, permits, lease, Duration{-1}, done);
  });
}

std::optional<std::string> PermitExpirableSemaphore::try_acquire_for(Duration wait,
                                                                     Duration lease) {
  auto ids = try_acquire_for(1, wait, lease);
  if (ids.empty()) return std::nullopt;
  return ids.front();
}

std::vector<std::string> PermitExpirableSemaphore::try_acquire_for(std::int64_t permits,
                                                                   Duration wait,
                                                                   Duration lease) {
  detail::check_permit_args(name_, permits, lease);
  return core_->call<std::vector<std::string>>([&](auto done) {
    detail::start_permit_acquire(core_, name_, permits, lease,
                                 detail::clamp_wait(wait), done);
  });
}

void PermitExpirableSemaphore::release(const std::string& id) {
  const std::string raw = sync::permit_id_from_hex(id, name_);
  const auto outcome = core_->call<detail::PermitRelease>(
      [&](auto done) { detail::release_one(core_, name_, raw, done); });
  if (outcome == detail::PermitRelease::lost) {
    std::rethrow_exception(lost_permit(id, *core_, name_));
  }
  if (outcome == detail::PermitRelease::unknown) {
    std::rethrow_exception(unknown_permit(id, *core_, name_));
  }
}

bool PermitExpirableSemaphore::try_release(const std::string& id) {
  const std::string raw = sync::permit_id_from_hex(id, name_);
  return core_->call<detail::PermitRelease>([&](auto done) {
           detail::release_one(core_, name_, raw, done);
         }) == detail::PermitRelease::released;
}

void PermitExpirableSemaphore::release(const std::vector<std::string>& ids) {
  if (ids.empty()) return;
  std::vector<std::string> raws;
  std::set<std::string> seen;
  for (const auto& id : ids) {
    std::string raw = sync::permit_id_from_hex(id, name_);
    if (!seen.insert(raw).second) {
      throw InvalidArgument("redisync: permit id " + id + " appears twice in a release of " +
                            describe_pes(*core_, name_));
    }
    raws.push_back(std::move(raw));
  }
  const std::string what = "releasing permits of " + describe_pes(*core_, name_);
  // The reply and, for a refused release, whether its first bad id was reported lost.
  using Answer = std::pair<net::Reply, bool>;
  Answer answer;
  try {
    answer = core_->call<Answer>([&](auto done) {
      auto args = pes_args(*core_);
      args.insert(args.end(), raws.begin(), raws.end());
      core_->executor().eval(
          lua::permit_expirable_semaphore_release_many, pes_keys(name_),
          std::move(args),
          [core = core_, name = name_, raws, what, done](std::exception_ptr error,
                                                         net::Reply reply) {
            if (!error && reply.is_error()) error = net::server_error(reply, what);
            if (error) return done(error, Answer{});
            bool lost = false;
            if (reply.integer >= 0) {  // all released
              for (const auto& raw : raws) {
                detail::metered_permit_released(*core, name, raw, true);
                settle_permit(*core, name, raw, true);
              }
            } else {  // none released; the first bad one is not held
              const auto bad = static_cast<std::size_t>(-reply.integer) - 1;
              if (bad < raws.size()) {
                detail::metered_permit_released(*core, name, raws[bad], false);
                lost = settle_permit(*core, name, raws[bad], false);
              }
            }
            done(nullptr, Answer{std::move(reply), lost});
          });
    });
  } catch (const Error&) {
    std::rethrow_exception(sync::note_may_have_run(std::current_exception(), what));
  }
  const net::Reply& reply = answer.first;
  if (reply.integer < 0) {
    const auto bad = static_cast<std::size_t>(-reply.integer) - 1;
    const std::string& id = bad < ids.size() ? ids[bad] : ids.front();
    throw UnknownPermitError(
        "redisync: permit " + id + " of " + describe_pes(*core_, name_) +
        (answer.second ? " was lost: its lease ended before this release (the lost-lock "
                         "handler was told)"
                       : " is not held (never issued, already released, or its lease expired)") +
        "; none of the " + std::to_string(ids.size()) + " permits was released");
  }
}

bool PermitExpirableSemaphore::update_lease(const std::string& id, Duration lease) {
  check_lease(name_, lease);
  const std::string raw = sync::permit_id_from_hex(id, name_);
  const std::string what = "updating a lease of " + describe_pes(*core_, name_);
  return core_->call<bool>([&](auto done) {
    const auto sent = sync::Clock::now();  // the new deadline counts from the server's now
    // It may run although its reply is lost (issue 36): a shorter lease's deadline holds from
    // the send on; only the confirmed reply below may set a later one.
    detail::cap_permit_deadline(*core_, name_, raw, lease, sent);
    core_->executor().eval(
        lua::permit_expirable_semaphore_update_lease, pes_keys(name_),
        pes_args(*core_, {raw, lease_arg(lease)}),
        [core = core_, name = name_, raw, lease, sent, what, done](std::exception_ptr error,
                                                                  net::Reply reply) {
          if (!error && reply.is_error()) error = net::server_error(reply, what);
          // May have run: the deadline stays the earlier one set before the send.
          if (error) return done(error, false);
          const bool held = reply.integer == 1;
          if (held) {
            watch_permit(*core, name, raw, lease, sent);  // the new lease's deadline
            detail::metered_permit_lease(*core, name, raw, lease);  // its hold ends later
          } else {
            settle_permit(*core, name, raw, false);
          }
          done(nullptr, held);
        });
  });
}

Duration PermitExpirableSemaphore::remaining_lease(const std::string& id) {
  const std::string raw = sync::permit_id_from_hex(id, name_);
  const auto reply = run_script(core_, lua::permit_expirable_semaphore_remaining_lease,
                                pes_keys(name_),
                                [&](const detail::ClientCore& c) { return pes_args(c, {raw}); },
                                "querying a lease of " + describe_pes(*core_, name_));
  if (reply.integer == 0) std::rethrow_exception(unknown_permit(id, *core_, name_));
  return Duration{reply.integer};
}

std::int64_t PermitExpirableSemaphore::available_permits() const {
  const std::string what = "querying " + describe_pes(*core_, name_);
  // The script returns N as stored; parsed strictly here, as Semaphore's count.
  return sync::parse_count(
      run_script(core_, lua::permit_expirable_semaphore_available, pes_keys(name_),
                 [](const detail::ClientCore& c) { return pes_args(c); }, what),
      what);
}

bool PermitExpirableSemaphore::try_set_permits(std::int64_t permits) {
  check_count(name_, permits, "permits to set on");
  return run_script(
             core_,
             lua::permit_expirable_semaphore_try_set_permits,
             pes_keys(name_),
             [&](const detail::ClientCore& c) { return pes_args(c, {std::to_string(permits)}); },
             "setting the permits of " + describe_pes(*core_, name_))
             .integer == 1;
}

void PermitExpirableSemaphore::set_permits(std::int64_t permits) {
  check_count(name_, permits, "permits to set on");
  run_script(core_, lua::permit_expirable_semaphore_set_permits, pes_keys(name_),
             [&](const detail::ClientCore& c) { return pes_args(c, {std::to_string(permits)}); },
             "setting the permits of " + describe_pes(*core_, name_));
}

void PermitExpirableSemaphore::add_permits(std::int64_t permits) {
  check_count(name_, permits, "permits to add to", -kMaxCount);
  run_script(core_, lua::permit_expirable_semaphore_add_permits, pes_keys(name_),
             [&](const detail::ClientCore& c) { return pes_args(c, {std::to_string(permits)}); },
             "adding permits to " + describe_pes(*core_, name_));
}

}  // namespace redisync
