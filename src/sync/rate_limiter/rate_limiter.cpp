// SPDX-License-Identifier: Apache-2.0
// redisync::RateLimiter: Redisson's RRateLimiter (docs/wire-format.md §17).
#include "redisync/rate_limiter.h"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <charconv>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "lua/scripts.h"
#include "net/server_text.h"
#include "redisync/errors.h"
#include "sync/acquire/acquire_loop.h"  // deadline_after
#include "sync/acquire/cancel_signal.h"
#include "sync/client_core.h"
#include "sync/identity.h"
#include "sync/metrics_report.h"
#include "sync/counters/permit_expirable_semaphore_ids.h"  // random_permit_id: 16 random bytes
#include "sync/rate_limiter/rate_limiter_plan.h"

namespace redisync {

namespace {

using sync::rate_keys;

std::string describe(const detail::ClientCore& core, const std::string& name) {
  return "rate limiter '" + name + "' on " + core.server();
}

class RateAcquire;

// Acquisitions sleeping out a window delay, by (Client, limiter name). A release() on that
// Client wakes them to try again at once, rather than sleeping while permits are free. (Other
// processes learn of a release only when their sleep ends: Redisson publishes nothing for the
// limiter.) Entries are added and removed on the owning Client's I/O thread; the mutex only
// guards the map all Clients share.
class Sleepers {
 public:
  using Key = std::pair<const void*, std::string>;

  static Sleepers& instance() {
    static Sleepers sleepers;
    return sleepers;
  }
  void add(const Key& key, const std::shared_ptr<RateAcquire>& acquire) {
    std::lock_guard lock(mutex_);
    sleeping_[key].push_back({acquire.get(), acquire});
  }
  void remove(const Key& key, const RateAcquire* acquire) {
    std::lock_guard lock(mutex_);
    auto it = sleeping_.find(key);
    if (it == sleeping_.end()) return;
    std::erase_if(it->second, [acquire](const Entry& e) { return e.ptr == acquire; });
    if (it->second.empty()) sleeping_.erase(it);
  }
  // The sleepers of `key`, no longer registered.
  std::vector<std::shared_ptr<RateAcquire>> take(const Key& key) {
    std::vector<std::shared_ptr<RateAcquire>> out;
    std::lock_guard lock(mutex_);
    auto it = sleeping_.find(key);
    if (it == sleeping_.end()) return out;
    for (const auto& e : it->second) {
      if (auto a = e.ref.lock()) out.push_back(std::move(a));
    }
    sleeping_.erase(it);
    return out;
  }

 private:
  struct Entry {
    const RateAcquire* ptr;
    std::weak_ptr<RateAcquire> ref;
  };
  std::mutex mutex_;
  std::map<Key, std::vector<Entry>> sleeping_;
};

// One acquisition on the I/O thread: attempt, and after a refusal sleep for the delay the
// script answered (bounded by the deadline; cut short by a release() on the same Client),
// then attempt again.
class RateAcquire : public std::enable_shared_from_this<RateAcquire> {
 public:
  using Done = std::function<void(std::exception_ptr, bool)>;

  RateAcquire(std::shared_ptr<detail::ClientCore> core, std::string name, std::int64_t permits,
              std::optional<sync::Clock::time_point> deadline, Done done)
      : core_(std::move(core)),
        keys_(rate_keys(name, core_->id())),
        what_(describe(*core_, name)),
        permits_(std::to_string(permits)),
        count_(permits),
        deadline_(deadline),
        timer_(core_->io()),
        done_(std::move(done)),
        sleeper_key_(core_.get(), name) {}
  RateAcquire(const RateAcquire&) = delete;
  RateAcquire& operator=(const RateAcquire&) = delete;
  ~RateAcquire() {
    if (sleeping_) Sleepers::instance().remove(sleeper_key_, this);
  }

  /// Counts attempts and wake-ups (with a Metrics hook).
  void set_probe(std::shared_ptr<sync::AcquireProbe> probe) { probe_ = std::move(probe); }

  /// Listens to `cancel` (an async acquisition's, if cancellable): a sleep ends at once with
  /// CancelledError; an attempt on its way decides first (one that was granted completes as
  /// acquired). Before the first attempt.
  void listen(std::shared_ptr<detail::CancelSignal> cancel) {
    if (!cancel) return;
    cancel_ = std::move(cancel);
    cancel_->attach([weak = weak_from_this()] {
      auto self = weak.lock();
      if (!self || self->finished_) return;
      self->cancelled_ = true;
      if (self->sleeping_) self->timer_.cancel();  // its callback finishes
    });
  }

  void attempt() {
    if (probe_) ++probe_->attempts;
    // A fresh grant id per attempt: a member of the window's sorted set per grant.
    core_->executor().eval(lua::rate_limiter_acquire, keys_, {permits_, sync::random_permit_id()},
                           [self = shared_from_this()](std::exception_ptr error, net::Reply reply) {
                             self->on_reply(std::move(error), reply);
                           });
  }

 private:
  void on_reply(std::exception_ptr error, const net::Reply& reply) {
    if (!error && reply.is_error()) error = sync::rate_reply_error(reply, what_, count_);
    if (!error && !reply.is_nil() && !reply.is_integer()) {
      error = std::make_exception_ptr(ServerError(
          "redisync: acquiring " + what_ + ": unexpected reply " + reply.to_string(),
          reply.to_string()));
    }
    // A reply lost after the attempt was sent: it may have granted the permit. Never "no".
    if (error && sync::may_have_run(error)) error = sync::rate_ambiguous_error(error, what_);
    if (error) return finish(std::move(error), false);
    if (reply.is_nil()) return finish(nullptr, true);
    if (cancelled_) return finish(cancelled_error(), false);
    std::optional<Duration> remaining;
    if (deadline_) {
      remaining = std::chrono::ceil<Duration>(*deadline_ - sync::Clock::now());
    }
    const auto sleep = sync::rate_sleep(reply.integer, remaining);
    if (!sleep) return finish(nullptr, false);
    timer_.expires_after(*sleep);
    sleeping_ = true;
    Sleepers::instance().add(sleeper_key_, shared_from_this());
    timer_.async_wait([self = shared_from_this()](std::error_code ec) {
      self->sleeping_ = false;
      Sleepers::instance().remove(self->sleeper_key_, self.get());
      if (self->cancelled_) return self->finish(self->cancelled_error(), false);
      if (ec && !std::exchange(self->woken_, false)) {
        return self->finish(std::make_exception_ptr(ClientClosedError(
                                "redisync: client closed while waiting on " + self->what_)),
                            false);
      }
      self->woken_ = false;
      self->attempt();
    });
  }

 public:
  // Cuts the current sleep short (a release() on this Client): the next attempt runs now.
  void wake() {
    if (!sleeping_ || cancelled_) return;
    if (probe_) {
      ++probe_->wake_ups;
      probe_->last_wake = sync::Clock::now();
    }
    woken_ = true;
    timer_.cancel();
  }

 private:
  void finish(std::exception_ptr error, bool acquired) {
    if (std::exchange(finished_, true)) return;
    if (cancel_) cancel_->detach();
    done_(std::move(error), acquired);
  }
  std::exception_ptr cancelled_error() const {
    return detail::cancelled_error("the permits of " + what_ + " were granted",
                                   "nothing was taken");
  }

  std::shared_ptr<detail::ClientCore> core_;
  std::vector<std::string> keys_;
  std::string what_;
  std::string permits_;
  std::int64_t count_;
  std::optional<sync::Clock::time_point> deadline_;
  asio::steady_timer timer_;
  Done done_;
  Sleepers::Key sleeper_key_;
  bool sleeping_ = false;  // a sleep is under way (registered in Sleepers)
  bool woken_ = false;     // wake() cancelled it
  bool cancelled_ = false;  // a cancellation was requested
  bool finished_ = false;   // done_ was called
  std::shared_ptr<detail::CancelSignal> cancel_;
  std::shared_ptr<sync::AcquireProbe> probe_;
};

// Runs a script and hands its reply (error replies mapped) to `done`; I/O thread.
void run_script(const std::shared_ptr<detail::ClientCore>& core, const lua::Script& script,
                std::vector<std::string> keys, std::vector<std::string> args, std::string what,
                std::int64_t permits, net::Retry retry,
                std::function<void(std::exception_ptr, net::Reply)> done) {
  core->executor().eval(
      script, std::move(keys), std::move(args),
      [done = std::move(done), what = std::move(what), permits](std::exception_ptr error,
                                                                net::Reply reply) {
        if (!error && reply.is_error()) error = sync::rate_reply_error(reply, what, permits);
        done(std::move(error), std::move(reply));
      },
      retry);
}

net::Reply call_script(const std::shared_ptr<detail::ClientCore>& core, const lua::Script& script,
                       std::vector<std::string> keys, std::vector<std::string> args,
                       const std::string& what, net::Retry retry = net::Retry::if_unsent) {
  return core->call<net::Reply>([&](auto done) {
    run_script(core, script, std::move(keys), std::move(args), what, 0, retry, done);
  });
}

// Runs one idempotent command from a user thread; error replies are thrown naming `what`.
net::Reply execute(const std::shared_ptr<detail::ClientCore>& core, std::vector<std::string> args,
                   const std::string& what) {
  auto reply = core->call<net::Reply>([&](auto done) {
    core->executor().execute(std::move(args), done, net::Retry::always);
  });
  if (reply.is_error()) net::throw_server_error(reply, "redisync: " + what);
  return reply;
}

std::int64_t parse_int(const std::string& text, const std::string& what, const char* field) {
  std::int64_t value = 0;
  if (!net::parse_decimal(text, value)) {
    throw ServerError("redisync: " + what + ": field '" + field + "' holds '" + text +
                          "', not an integer",
                      text);
  }
  return value;
}

}  // namespace

namespace detail {

void check_rate_permits(std::int64_t permits, const std::string& name) {
  if (permits < 1 || permits > RateLimiter::kMaxRate) {
    throw InvalidArgument("redisync: permits for rate limiter '" + name + "' must be in [1, " +
                          std::to_string(RateLimiter::kMaxRate) + "] (got " +
                          std::to_string(permits) + ")");
  }
}

void start_rate_acquire(const std::shared_ptr<ClientCore>& core, const std::string& name,
                        std::int64_t permits, Duration wait,
                        std::function<void(std::exception_ptr, bool)> on_done,
                        std::shared_ptr<CancelSignal> cancel) {
  core->post_start(
      std::move(on_done), [](auto& late) { late(detail::ClientCore::closed_error(), false); },
      [core, name, permits, wait, cancel = std::move(cancel)](auto done) mutable {
        auto meter = start_acquire_meter(*core, "rate limiter", name);
        if (meter) {
          done = [meter, done = std::move(done)](std::exception_ptr error, bool acquired) {
            metrics_acquired(meter, error, acquired, nullptr);
            done(std::move(error), acquired);
          };
        }
        auto acquire = std::make_shared<RateAcquire>(core, name, permits,
                                                     sync::deadline_after(wait), std::move(done));
        acquire->set_probe(probe_of(meter));
        acquire->listen(std::move(cancel));
        acquire->attempt();
      });
}

void start_rate_release(const std::shared_ptr<ClientCore>& core, const std::string& name,
                        std::int64_t permits, std::function<void(std::exception_ptr)> on_done) {
  core->post_start(
      std::move(on_done), [](auto& late) { late(detail::ClientCore::closed_error()); },
      [core, name, permits](auto done) mutable {
        // Not idempotent (it adds permits): resent only when surely unsent.
        run_script(core, lua::rate_limiter_release, rate_keys(name, core->id()),
                   {std::to_string(permits)}, describe(*core, name), permits, net::Retry::if_unsent,
                   [core, name, done](std::exception_ptr error, net::Reply) {
                     // Permits came back: this Client's sleepers on the limiter try again now.
                     if (!error) {
                       for (const auto& a : Sleepers::instance().take({core.get(), name}))
                         a->wake();
                     }
                     done(std::move(error));
                   });
      });
}

void start_rate_available(const std::shared_ptr<ClientCore>& core, const std::string& name,
                          std::function<void(std::exception_ptr, std::int64_t)> on_done) {
  core->post_start(
      std::move(on_done), [](auto& late) { late(detail::ClientCore::closed_error(), 0); },
      [core, name](auto done) mutable {
        run_script(core, lua::rate_limiter_available, rate_keys(name, core->id()), {},
                   describe(*core, name), 0, net::Retry::always,
                   [done](std::exception_ptr error, net::Reply reply) {
                     done(std::move(error), error ? 0 : reply.integer);
                   });
      });
}

}  // namespace detail

RateLimiter::RateLimiter(std::shared_ptr<detail::ClientCore> core, std::string name)
    : core_(std::move(core)), name_(std::move(name)) {
  if (name_.empty()) throw InvalidArgument("redisync: rate limiter name must not be empty");
  sync::check_cluster_name(core_->config().topology == Topology::cluster, name_, "rate limiter");
}

bool RateLimiter::try_set_rate(RateType type, std::int64_t rate, Duration interval,
                               Duration keep_alive) {
  const std::string what = describe(*core_, name_);
  sync::check_rate_config(rate, interval, keep_alive, what);
  return call_script(core_, lua::rate_limiter_try_set_rate, {name_},
                     {std::to_string(rate), std::to_string(interval.count()),
                      std::to_string(static_cast<int>(type)), std::to_string(keep_alive.count())},
                     what, net::Retry::always)  // HSETNX: a resend changes nothing
             .integer == 1;
}

void RateLimiter::set_rate(RateType type, std::int64_t rate, Duration interval,
                           Duration keep_alive) {
  const std::string what = describe(*core_, name_);
  sync::check_rate_config(rate, interval, keep_alive, what);
  const auto keys = rate_keys(name_, core_->id());
  const bool per_client = type == RateType::per_client;
  call_script(core_, lua::rate_limiter_set_rate,
              {name_, keys[per_client ? 2 : 1], keys[per_client ? 4 : 3]},
              {std::to_string(rate), std::to_string(interval.count()),
               std::to_string(static_cast<int>(type)), std::to_string(keep_alive.count())},
              what, net::Retry::always);  // overwrites: a resend has the same effect
}

std::optional<RateLimiterConfig> RateLimiter::config() const {
  const std::string what = describe(*core_, name_);
  auto reply = execute(core_, {"HMGET", name_, "rate", "interval", "type", "keepAliveTime"},
                       "reading " + what);
  if (!reply.is_array() || reply.elements.size() != 4) {
    throw ServerError("redisync: reading " + what + ": unexpected reply " + reply.to_string(),
                      reply.to_string());
  }
  const auto& e = reply.elements;
  if (e[0].is_nil() || e[1].is_nil() || e[2].is_nil()) return std::nullopt;
  RateLimiterConfig cfg;
  cfg.rate = parse_int(e[0].str, what, "rate");
  cfg.interval = Duration{parse_int(e[1].str, what, "interval")};
  const auto type = parse_int(e[2].str, what, "type");
  if (type != 0 && type != 1) {
    throw ServerError("redisync: " + what + ": field 'type' holds '" + e[2].str +
                          "', not 0 (overall) or 1 (per client)",
                      e[2].str);
  }
  cfg.type = static_cast<RateType>(type);
  cfg.keep_alive = Duration{e[3].is_nil() ? 0 : parse_int(e[3].str, what, "keepAliveTime")};
  return cfg;
}

bool RateLimiter::try_acquire(std::int64_t permits) { return try_acquire_wait(permits, Duration{0}); }

bool RateLimiter::try_acquire_wait(std::int64_t permits, Duration wait) {
  detail::check_rate_permits(permits, name_);
  return core_->call<bool>([&](auto done) {
    // Negative only from to_wait_ms(): a wait beyond max_duration, i.e. no limit.
    detail::start_rate_acquire(core_, name_, permits,
                               wait < Duration{0} ? Duration{-1} : detail::clamp_wait(wait), done);
  });
}

void RateLimiter::acquire(std::int64_t permits) {
  detail::check_rate_permits(permits, name_);
  core_->call<bool>(
      [&](auto done) { detail::start_rate_acquire(core_, name_, permits, Duration{-1}, done); });
}

void RateLimiter::release(std::int64_t permits) {
  detail::check_rate_permits(permits, name_);
  core_->call<bool>([&](auto done) {
    detail::start_rate_release(core_, name_, permits,
                               [done](std::exception_ptr e) { done(std::move(e), true); });
  });
}

std::int64_t RateLimiter::available_permits() const {
  return core_->call<std::int64_t>(
      [&](auto done) { detail::start_rate_available(core_, name_, done); });
}

bool RateLimiter::remove() {
  const std::string what = "removing " + describe(*core_, name_);
  std::vector<std::string> args = rate_keys(name_, core_->id());
  args.insert(args.begin(), "DEL");
  return execute(core_, std::move(args), what).integer > 0;
}

}  // namespace redisync
