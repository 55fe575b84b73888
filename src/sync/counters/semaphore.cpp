// SPDX-License-Identifier: Apache-2.0
// redisync::Semaphore: Redisson's RSemaphore (docs/wire-format.md §7, §13).
#include "redisync/semaphore.h"

#include "lua/scripts.h"
#include "lua/publish_guard.h"
#include "redisync/errors.h"
#include "sync/acquire/acquire_loop.h"
#include "sync/acquire/acquire_record.h"
#include "sync/client_core.h"
#include "sync/counters/counts.h"
#include "sync/durations.h"
#include "sync/identity.h"
#include "sync/metrics_report.h"
#include "sync/hold/recorded_step.h"
#include "sync/counters/semaphore_acquire.h"
#include "sync/counters/semaphore_gate.h"

namespace redisync {

namespace {

std::string describe_semaphore(const detail::ClientCore& core, const std::string& name) {
  return "semaphore '" + name + "' on " + core.server();
}

// Runs one script on the I/O thread and blocks for its reply (error replies thrown, naming
// `what`). `args` may end with the publish command: kPublish is replaced on the I/O thread.
const std::string kPublish = std::string("\0publish", 8);
net::Reply run_semaphore_script(const std::shared_ptr<detail::ClientCore>& core,
                                const lua::Script& script, std::vector<std::string> keys,
                                std::vector<std::string> args, const std::string& what,
                                net::Retry retry = net::Retry::if_unsent) {
  return core->call<net::Reply>([&](auto done) {
    for (auto& a : args) {
      if (a == kPublish) a = core->publish_command();
    }
    core->executor().eval(
        script, std::move(keys), std::move(args),
        [done, what](std::exception_ptr error, net::Reply reply) {
          if (!error && reply.is_error()) error = net::server_error(reply, what);
          done(error, std::move(reply));
        },
        retry);
  });
}

// Gives back (or adds) `permits` with a release record, so a resend after a lost reply
// applies it once (sync/hold/recorded_step.h; docs/wire-format.md §7). I/O thread.
void release_recorded(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                      std::int64_t permits, std::string what,
                      std::function<void(std::exception_ptr)> done) {
  sync::run_recorded_step(core, lua::semaphore_release,
                          {name, sync::semaphore_channel(name),
                           sync::step_record_key("redisync_semaphore_release", name)},
                          {std::to_string(permits), core->publish_command(),
                           std::to_string(sync::step_record_ttl_ms(*core))},
                          std::move(what),
                          [done](std::exception_ptr error, net::Reply) { done(std::move(error)); });
}

}  // namespace

namespace detail {

void check_permits(std::int64_t permits, const char* what, const std::string& name) {
  if (permits < 0 || permits > kMaxPermits) {
    throw InvalidArgument(std::string("redisync: ") + what + " for semaphore '" + name +
                          "' must be in [0, " + std::to_string(kMaxPermits) + "] (got " +
                          std::to_string(permits) + ")");
  }
}

void start_semaphore_acquire(const std::shared_ptr<ClientCore>& core, const std::string& name,
                             std::int64_t permits, Duration wait,
                             std::function<void(std::exception_ptr, bool)> on_done,
                             std::shared_ptr<CancelSignal> cancel) {
  check_permits(permits, "permits", name);
  core->post_start(
      std::move(on_done), [](auto& late) { late(detail::ClientCore::closed_error(), false); },
      [core, name, permits, wait, cancel = std::move(cancel)](auto done) mutable {
        if (permits == 0) return done(nullptr, true);  // acquire(0): no server call
        const auto deadline = sync::deadline_after(wait);
        // Measured from here (the wait includes the local gate's), with a Metrics hook.
        auto meter = start_acquire_meter(*core, "semaphore", name);
        if (meter) {
          done = [meter, done = std::move(done)](std::exception_ptr error, bool acquired) {
            metrics_acquired(meter, error, acquired, nullptr);
            done(std::move(error), acquired);
          };
        }
        const std::string what = "acquiring " + describe_semaphore(*core, name);
        sync::SemaphoreAcquire acquire;
        acquire.name = name;
        acquire.gate_key = "semaphore:" + name;
        acquire.record_prefix = "redisync_semaphore_request";
        acquire.permits = permits;
        acquire.deadline = deadline;
        acquire.probe = probe_of(meter);
        acquire.cancel = std::move(cancel);
        acquire.attempt = [core, name, permits, what](const std::string& record,
                                                      const std::string& record_ttl,
                                                      sync::AcquireLoop::AttemptDone cb) {
          core->executor().eval(
              lua::with_publish_guard(lua::semaphore_try_acquire), {name, record},
              lua::publish_guard_args({std::to_string(permits), record_ttl},
                                      core->publish_command(), sync::semaphore_channel(name)),
              [cb, what](std::exception_ptr error, net::Reply reply) {
                if (!error && reply.is_error()) error = net::server_error(reply, what);
                if (error) return cb(std::move(error), {});
                // No lease to wait out: sleep until a release message (or the deadline).
                cb(nullptr, {reply.integer == 1, -1});
              },
              net::Retry::never);  // the loop resends, after a recheck
        };
        sync::start_semaphore_acquire_loop(core, std::move(acquire), std::move(done));
      });
}

void start_semaphore_release(const std::shared_ptr<ClientCore>& core, const std::string& name,
                             std::int64_t permits,
                             std::function<void(std::exception_ptr)> on_done) {
  check_permits(permits, "permits", name);
  core->post_start(
      std::move(on_done), [](auto& late) { late(detail::ClientCore::closed_error()); },
      [core, name, permits](auto done) mutable {
        if (permits == 0) return done(nullptr);
        release_recorded(core, name, permits, "releasing " + describe_semaphore(*core, name), done);
      });
}

}  // namespace detail

Semaphore::Semaphore(std::shared_ptr<detail::ClientCore> core, std::string name)
    : core_(std::move(core)), name_(std::move(name)) {
  if (name_.empty()) throw InvalidArgument("redisync: semaphore name must not be empty");
  sync::check_cluster_name(core_->config().topology == Topology::cluster, name_, "semaphore");
}

void Semaphore::acquire(std::int64_t permits) {
  detail::check_permits(permits, "permits", name_);
  if (permits == 0) return;
  core_->call<bool>([&](auto done) {
    detail::start_semaphore_acquire(core_, name_, permits, Duration{-1}, done);
  });
}

bool Semaphore::try_acquire(std::int64_t permits) { return try_acquire_wait(permits, Duration{0}); }

bool Semaphore::try_acquire_wait(std::int64_t permits, Duration wait) {
  detail::check_permits(permits, "permits", name_);
  if (permits == 0) return true;
  return core_->call<bool>([&](auto done) {
    // Negative only from to_wait(): a wait beyond max_duration, i.e. no limit.
    detail::start_semaphore_acquire(core_, name_, permits,
                                    wait < Duration{0} ? Duration{-1} : detail::clamp_wait(wait),
                                    done);
  });
}

void Semaphore::release(std::int64_t permits) {
  detail::check_permits(permits, "permits", name_);
  if (permits == 0) return;
  core_->call<bool>([&](auto done) {
    detail::start_semaphore_release(core_, name_, permits,
                                    [done](std::exception_ptr e) { done(e, true); });
  });
}

bool Semaphore::release_if_exists(std::int64_t permits) {
  detail::check_permits(permits, "permits", name_);
  if (permits == 0)
    return core_
               ->call<net::Reply>([&](auto done) {
                 core_->executor().execute({"EXISTS", name_}, done, net::Retry::always);
               })
               .integer == 1;
  return run_semaphore_script(
             core_, lua::semaphore_release_if_exists, {name_, sync::semaphore_channel(name_)},
             {std::to_string(permits), kPublish}, "releasing " + describe_semaphore(*core_, name_))
             .integer == 1;
}

bool Semaphore::try_set_permits(std::int64_t permits) {
  detail::check_permits(permits, "permits", name_);
  return run_semaphore_script(core_, lua::semaphore_try_set_permits,
                              {name_, sync::semaphore_channel(name_)},
                              {std::to_string(permits), kPublish, "0"},
                              "setting the permits of " + describe_semaphore(*core_, name_))
             .integer == 1;
}

bool Semaphore::try_set_permits(std::int64_t permits, Duration ttl) {
  detail::check_permits(permits, "permits", name_);
  sync::check_lease(ttl, "ttl for semaphore '" + name_ + "'");
  return run_semaphore_script(core_, lua::semaphore_try_set_permits,
                              {name_, sync::semaphore_channel(name_)},
                              {std::to_string(permits), kPublish, std::to_string(ttl.count())},
                              "setting the permits of " + describe_semaphore(*core_, name_))
             .integer == 1;
}

void Semaphore::add_permits(std::int64_t permits) {
  if (permits < -kMaxPermits || permits > kMaxPermits) {
    throw InvalidArgument("redisync: permits to add to semaphore '" + name_ + "' must be in [-" +
                          std::to_string(kMaxPermits) + ", " + std::to_string(kMaxPermits) +
                          "] (got " + std::to_string(permits) + ")");
  }
  core_->call<bool>([&](auto done) {
    release_recorded(core_, name_, permits,
                     "adding permits to " + describe_semaphore(*core_, name_),
                     [done](std::exception_ptr e) { done(e, true); });
  });
}

std::int64_t Semaphore::available_permits() const {
  const std::string what = "querying " + describe_semaphore(*core_, name_);
  auto reply = core_->call<net::Reply>([&](auto done) {
    core_->executor().execute({"GET", name_}, done, net::Retry::always);
  });
  return sync::parse_count(reply, what);  // strict: "12abc" is not 12
}

std::int64_t Semaphore::drain_permits() {
  return run_semaphore_script(core_, lua::semaphore_drain, {name_}, {},
                              "draining " + describe_semaphore(*core_, name_))
      .integer;
}

bool Semaphore::remove() {
  auto reply = core_->call<net::Reply>([&](auto done) {
    core_->executor().execute({"DEL", name_}, done);
  });
  if (reply.is_error()) {
    net::throw_server_error(reply, "removing " + describe_semaphore(*core_, name_));
  }
  return reply.integer == 1;
}

}  // namespace redisync
