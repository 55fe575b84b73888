// SPDX-License-Identifier: Apache-2.0
// The lease promise of docs/safety.md as a randomized property (issue 36): at every moment,
// for every hold a call reported as held, the Client's local deadline (lease_deadline(), when
// its lost notice is due) is at or before the server's expiry of the lock (now + PTTL), and
// two Clients never both believe they hold the lock. Each schedule is drawn from a seed
// (lease_property_steps.h): A, behind a fault proxy, and B, a competitor, acquire (blocking,
// try, async, in the background to be granted), release, and A's requests and replies are
// lost, held back and delivered late, delayed, blackholed and reset, with short leases. After
// every step (and through sleeps) both Clients are checked. Every lock kind and the
// composite MultiLock (each member key against the Client's deadline for that
// member), both handoff modes.
//
// Size: REDISYNC_PROPERTY_SCHEDULES=N schedules per kind and mode (default 3, fewer under a
// sanitizer), seeds REDISYNC_PROPERTY_FIRST_SEED.. (default 1); REDISYNC_PROPERTY_SEED=S runs
// the one seed S; REDISYNC_PROPERTY_SECONDS=T starts no schedule after T s (per kind and
// mode); REDISYNC_PROPERTY_PARALLEL=P runs P schedules at a time (default 1);
// REDISYNC_PROPERTY_VERBOSE=1 prints every schedule's steps. A failure prints its seed and
// steps: rerun it with REDISYNC_PROPERTY_SEED and a --gtest_filter on its kind and mode.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <functional>
#include <future>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lease_property_steps.h"
#include "redisync/redisync.h"
#include "support/actor_thread.h"
#include "support/fault_proxy.h"
#include "support/lease_bound.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::Client;
using redisync::Config;
using redisync::Duration;
using redisync::Handoff;
using redisync::test::ActorThread;
using redisync::test::AfterDrop;
using redisync::test::Direction;
using redisync::test::FaultProxy;
using redisync::test::RedisServer;
using redisync::test::RequestMatch;
using redisync::test::key_lease_bound_violation;
using redisync::test::lease_bound_violation;
using namespace redisync::test::lease_property;

namespace {

/// The lock under test as the schedule drives it: a BasicLock of any kind, or a composite
/// (MultiLock) whose members are locks of one Client.
class Subject {
 public:
  using TryDone = std::function<void(std::exception_ptr, bool)>;
  using UnlockDone = std::function<void(std::exception_ptr)>;
  virtual ~Subject() = default;
  virtual void lock() = 0;
  virtual void lock(Duration lease) = 0;
  virtual bool try_lock() = 0;
  virtual bool try_lock_for(Duration wait) = 0;
  virtual bool try_lock_for(Duration wait, Duration lease) = 0;
  virtual void async_try_lock(std::int64_t owner, Duration wait, Duration lease, TryDone done) = 0;
  virtual redisync::ReleaseResult release() = 0;
  virtual void async_unlock(std::int64_t owner, UnlockDone done) = 0;
  virtual bool lost(std::int64_t owner) const = 0;
};

template <class L>
class SubjectOf final : public Subject {
 public:
  explicit SubjectOf(L lock) : lock_(std::move(lock)) {}
  void lock() override { lock_.lock(); }
  void lock(Duration lease) override { lock_.lock(lease); }
  bool try_lock() override { return lock_.try_lock(); }
  bool try_lock_for(Duration wait) override { return lock_.try_lock_for(wait); }
  bool try_lock_for(Duration wait, Duration lease) override {
    return lock_.try_lock_for(wait, lease);
  }
  void async_try_lock(std::int64_t owner, Duration wait, Duration lease, TryDone done) override {
    lock_.async_try_lock(owner, wait, lease, std::move(done));
  }
  redisync::ReleaseResult release() override { return lock_.release(); }
  void async_unlock(std::int64_t owner, UnlockDone done) override {
    lock_.async_unlock(owner, std::move(done));
  }
  bool lost(std::int64_t owner) const override { return lock_.lost(owner); }

 private:
  L lock_;
};

using Make = std::function<std::unique_ptr<Subject>(Client&, const std::string&)>;

template <class L>
std::unique_ptr<Subject> subject(L lock) {
  return std::make_unique<SubjectOf<L>>(std::move(lock));
}

struct Kind {
  const char* name;
  Make make_a;     // A's lock
  Make make_b;     // B's: the same kind, or the write side when A reads
  bool reentrant;  // A may take it again while it holds it
  int members = 0;  // a composite's: its member keys are "<name>:1".."<name>:<members>"
};

/// Every key of a composite's members, or the lock's own.
std::vector<std::string> keys_of(const Kind& kind, const std::string& name) {
  if (kind.members == 0) return {name};
  std::vector<std::string> keys;
  for (int i = 1; i <= kind.members; ++i) keys.push_back(name + ":" + std::to_string(i));
  return keys;
}

// A single kind's handle; both sides are the same kind unless said.
template <class F>
Make single(F make) {
  return [make](Client& c, const std::string& n) { return subject(make(c, n)); };
}

const Kind kKinds[] = {
    {"lock", single([](Client& c, const std::string& n) { return c.lock(n); }),
     single([](Client& c, const std::string& n) { return c.lock(n); }), true},
    {"fenced", single([](Client& c, const std::string& n) { return c.fenced_lock(n); }),
     single([](Client& c, const std::string& n) { return c.fenced_lock(n); }), true},
    {"non_reentrant",
     single([](Client& c, const std::string& n) { return c.non_reentrant_lock(n); }),
     single([](Client& c, const std::string& n) { return c.non_reentrant_lock(n); }), false},
    {"fair", single([](Client& c, const std::string& n) { return c.fair_lock(n); }),
     single([](Client& c, const std::string& n) { return c.fair_lock(n); }), true},
    {"non_reentrant_fair",
     single([](Client& c, const std::string& n) { return c.non_reentrant_fair_lock(n); }),
     single([](Client& c, const std::string& n) { return c.non_reentrant_fair_lock(n); }), false},
    // No pub/sub and no grants (both modes run it the same way): waiters poll.
    {"spin", single([](Client& c, const std::string& n) { return c.spin_lock(n); }),
     single([](Client& c, const std::string& n) { return c.spin_lock(n); }), true},
    {"write",
     single([](Client& c, const std::string& n) { return c.read_write_lock(n).write_lock(); }),
     single([](Client& c, const std::string& n) { return c.read_write_lock(n).write_lock(); }),
     true},
    // A reads, B writes: the writer is granted when the last reader leaves.
    {"read",
     single([](Client& c, const std::string& n) { return c.read_write_lock(n).read_lock(); }),
     single([](Client& c, const std::string& n) { return c.read_write_lock(n).write_lock(); }),
     true},
    // A composite: each member a hold of its own, granted on its own in grant mode; the
    // composite sets their final leases (docs/wire-format.md section 6). (RedLock shares its
    // code; its members must be one name on different servers, which one proxy cannot give.)
    {"multi",
     [](Client& c, const std::string& n) {
       return subject(redisync::MultiLock{c.lock(n + ":1"), c.fair_lock(n + ":2")});
     },
     [](Client& c, const std::string& n) {
       return subject(redisync::MultiLock{c.lock(n + ":1"), c.fair_lock(n + ":2")});
     },
     true, 2},
};

long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atol(v) : fallback;
}

std::string error_text(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    return x.what();
  } catch (...) {
    return "unknown exception";
  }
}

/// A background acquire: its completion, when it comes (I/O thread).
struct Pending {
  std::mutex mutex;
  bool done = false;
  bool got = false;
  std::string error;
};

std::shared_ptr<Pending> start_async(Subject& lock, std::int64_t owner, int wait_ms,
                                     int lease_ms) {
  auto p = std::make_shared<Pending>();
  try {
    lock.async_try_lock(owner, Duration(wait_ms), Duration(lease_ms),
                        [p](std::exception_ptr e, bool got) {
                          std::lock_guard g(p->mutex);
                          p->done = true;
                          p->got = got && !e;
                          if (e) p->error = error_text(e);
                        });
  } catch (const std::exception& e) {
    std::lock_guard g(p->mutex);
    p->done = true;
    p->error = e.what();
  }
  return p;
}

/// One schedule of one seed. A's blocking calls run on its own thread (their owner); its
/// background acquires use that thread's owner id too, so every hold of A is one owner's.
class Schedule {
 public:
  Schedule(const Kind& kind, Handoff mode, RedisServer& server, FaultProxy& proxy,
           std::uint64_t seed)
      : kind_(kind), server_(server), proxy_(proxy), seed_(seed), rng_(seed) {
    name_ = redisync::test::unique_name(std::string("lease-prop:") + kind.name + ":");
    keys_ = keys_of(kind, name_);
    const int a_watchdog = rng_.one_of({600, 900, 1500});
    const int a_grant = rng_.one_of({300, 800, 1500});
    const int b_watchdog = rng_.one_of({600, 900, 1500});
    const int b_grant = rng_.one_of({300, 800, 1500});
    const int timeout = rng_.one_of({200, 400});
    const int retries = rng_.one_of({1, 2, 3});
    auto a = Config::from_url(proxy.url());
    a.handoff = mode;
    a.lock_watchdog_timeout = Duration(a_watchdog);
    a.grant_lease = Duration(a_grant);
    a.timeout = Duration(timeout);
    a.connect_timeout = 500ms;
    a.retry_attempts = retries;
    a.retry_interval = 20ms;
    a.reconnection_delay_min = 10ms;
    a.reconnection_delay_max = 100ms;
    a.subscription_linger = 100ms;
    a.log = [](std::string_view) {};
    auto b = redisync::test::config_for(server);
    b.handoff = mode;
    b.lock_watchdog_timeout = Duration(b_watchdog);
    b.grant_lease = Duration(b_grant);
    b.log = [](std::string_view) {};
    log_ = "A: watchdog " + std::to_string(a_watchdog) + " grant " + std::to_string(a_grant) +
           " timeout " + std::to_string(timeout) + " retries " + std::to_string(retries) +
           "; B: watchdog " + std::to_string(b_watchdog) + " grant " + std::to_string(b_grant) +
           "\n";
    a_client_ = std::make_unique<Client>(a);
    b_client_ = std::make_unique<Client>(b);
    a_client_->on_lock_lost([](const redisync::LockLostEvent&) {});
    b_client_->on_lock_lost([](const redisync::LockLostEvent&) {});
    a_lock_ = kind.make_a(*a_client_, name_);
    b_lock_ = kind.make_b(*b_client_, name_);
    b_owner_ = Client::new_owner_id();
    delivered_ = proxy.withheld().size();  // the proxy keeps earlier schedules' copies too
  }

  ~Schedule() {
    // Closing the Clients ends a call still under way (ClientClosedError); then A's thread
    // finishes. The proxy is shared by the schedules: back to no faults.
    a_client_.reset();
    b_client_.reset();
    actor_.stop();
    proxy_.clear();
    proxy_.reset_connections();
  }

  /// "" when the property held through the whole schedule; else the failure with the seed and
  /// the steps up to it.
  std::string run(int steps) {
    const std::string failure = run_steps(steps);
    if (env_long("REDISYNC_PROPERTY_VERBOSE", 0) != 0) {
      std::cout << "seed " << seed_ << " (" << kind_.name << "):\n" << log_ << std::flush;
    }
    return failure;
  }

 private:
  std::string run_steps(int steps) {
    for (int i = 0; i < steps; ++i) {
      const Step step = next_step(rng_, view());
      log_ += "  " + std::to_string(i) + ": " + step.text();
      std::string failure = apply(step);
      log_ += "\n";
      if (failure.empty()) failure = check();
      if (!failure.empty()) {
        return "seed " + std::to_string(seed_) + " (" + kind_.name + "): " + failure +
               "\nsteps:\n" + log_ + server_story();
      }
    }
    return "";
  }

  /// What the server ran on the lock, in order (its slow log records every command: the test
  /// sets the threshold to 0), and the lock now: for the report of a failure.
  std::string server_story() {
    std::string out = "server, oldest first (A's connections come through the proxy):\n";
    const auto log = server_.command({"SLOWLOG", "GET", "1000"});
    for (auto it = log.elements.rbegin(); it != log.elements.rend(); ++it) {
      const auto& e = *it;
      if (e.elements.size() < 4) continue;
      const std::string args = e.elements[3].debug_string();
      if (args.find(name_) == std::string::npos) continue;
      out += "  " + (e.elements.size() > 4 ? e.elements[4].debug_string() : std::string()) +
             " " + args + "\n";
    }
    out += "now:";
    for (const auto& key : keys_) out += " " + key_state(key);
    out += "\n";
    return out;
  }

  View view() {
    poll();
    View v;
    v.reentrant = kind_.reentrant;
    v.a_holds = a_holds_;
    v.a_pending = a_pending_ != nullptr;
    v.b_holds = b_holds_;
    v.b_pending = b_pending_ != nullptr;
    v.withheld = withheld_;
    return v;
  }

  /// Takes in the background acquires that completed.
  void poll() {
    const auto take = [this](std::shared_ptr<Pending>& p, int& holds, const char* who) {
      if (!p) return;
      bool got = false;
      std::string error;
      {
        std::lock_guard g(p->mutex);
        if (!p->done) return;
        got = p->got;
        error = p->error;
      }
      p.reset();  // after the guard: it may hold the last reference to the mutex
      if (got) ++holds;
      log_ += std::string(" [then ") + who + " background acquire: " +
              (got ? "acquired" : error.empty() ? "not acquired" : error) + "]";
    };
    take(a_pending_, a_holds_, "A");
    take(b_pending_, b_holds_, "B");
  }

  void outcome(const std::string& text) { log_ += " -> " + text; }

  /// Runs `f` on A's thread (a blocking call of A); a failure when it hangs.
  std::string on_a(std::function<std::string()> f, std::chrono::milliseconds limit = 15s) {
    auto r = actor_.run_for<std::string>(std::move(f), limit);
    if (!r) return "A's call did not return within " + std::to_string(limit.count()) + " ms";
    outcome(*r);
    return "";
  }

  /// A's acquire on its thread: "acquired", "not acquired" or the error.
  std::string a_acquire(std::function<bool(Subject&)> call) {
    return on_a([this, call] {
      try {
        if (!call(*a_lock_)) return std::string("not acquired");
        ++a_holds_;
        return std::string("acquired");
      } catch (const std::exception& e) {
        return std::string("error: ") + e.what();
      }
    });
  }

  /// Waits for a background acquire to complete (poll() then counts its hold).
  std::string await(const std::shared_ptr<Pending>& p, const char* who) {
    if (!redisync::test::wait_until(
            [&] {
              std::lock_guard g(p->mutex);
              return p->done;
            },
            15s, 5ms)) {
      return std::string(who) + "'s background acquire did not complete within 15 s";
    }
    poll();
    return "";
  }

  std::string apply(const Step& s) {
    const Duration lease(s.lease_ms);
    const Duration wait(s.wait_ms);
    switch (s.op) {
      case Op::a_lock:
        return a_acquire([s, lease](Subject& l) {
          if (s.variant == 0 || s.lease_ms == 0) {
            l.lock();
          } else {
            l.lock(lease);
          }
          return true;
        });
      case Op::a_try:
        return a_acquire([s, lease, wait](Subject& l) {
          if (s.variant == 0) return l.try_lock();
          if (s.variant == 1 || s.lease_ms == 0) return l.try_lock_for(wait);
          return l.try_lock_for(wait, lease);
        });
      case Op::a_async: {
        // From A's thread, so a hold it takes is the same owner's as its blocking ones.
        return on_a([this, s] {
          auto p = start_async(*a_lock_, actor_.owner(), s.wait_ms, s.lease_ms);
          redisync::test::wait_until(
              [&] {
                std::lock_guard g(p->mutex);
                return p->done;
              },
              15s, 2ms);
          std::lock_guard g(p->mutex);
          if (!p->done) return std::string("no completion");
          if (p->got) ++a_holds_;
          return p->got ? std::string("acquired")
                        : p->error.empty() ? std::string("not acquired") : p->error;
        }, 20s);
      }
      case Op::a_wait:
        a_pending_ = start_async(*a_lock_, actor_.owner(), s.wait_ms, s.lease_ms);
        return "";
      case Op::a_await:
        return await(a_pending_, "A");
      case Op::a_release:
        return on_a([this] {
          auto r = a_lock_->release();
          if (r.outcome == redisync::ReleaseOutcome::failed) {
            // The release may have run although its reply was lost; the Client keeps the hold
            // for a retry. The retry, once the faults are off, returns the first outcome (the
            // release record): A then surely does not hold it.
            proxy_.clear();
            proxy_.reset_connections();
            const auto again = a_lock_->release();
            if (a_holds_ > 0) --a_holds_;
            return "failed (" + r.error + "); again: " + outcome_text(again);
          }
          if (a_holds_ > 0) --a_holds_;
          return outcome_text(r);
        });
      case Op::b_wait:
        b_pending_ = start_async(*b_lock_, b_owner_, s.wait_ms, s.lease_ms);
        return "";
      case Op::b_await:
        return await(b_pending_, "B");
      case Op::b_release_race: {
        proxy_.set_subscriber_delay((s.variant & 2) != 0 ? Duration(3000) : Duration(0));
        const auto before = proxy_.stats().dropped_replies;
        proxy_.drop_reply(RequestMatch{"EVALSHA", "", name_}, 1,
                          (s.variant & 1) != 0 ? AfterDrop::stall : AfterDrop::reset);
        // A's next attempt comes within a third of the grant lease (its registration's
        // refresh) or when B's lease runs out; bounded.
        const bool lost = redisync::test::wait_until(
            [&] { return proxy_.stats().dropped_replies > before; }, 2s, 2ms);
        outcome(lost ? "A's attempt lost" : "no attempt of A within 2 s");
        std::this_thread::sleep_for(wait);
        [[fallthrough]];
      }
      case Op::b_release: {
        auto done = std::make_shared<std::promise<std::string>>();
        auto f = done->get_future();
        b_lock_->async_unlock(b_owner_, [done](std::exception_ptr e) {
          done->set_value(e ? error_text(e) : std::string("released"));
        });
        if (f.wait_for(15s) != std::future_status::ready) return "B's release hung";
        b_holds_ = 0;
        outcome(f.get());
        return "";
      }
      case Op::drop_reply:
      case Op::drop_reply_stall:
        proxy_.drop_reply(RequestMatch{"EVALSHA", "", name_}, 1,
                          s.op == Op::drop_reply ? AfterDrop::reset : AfterDrop::stall);
        return "";
      case Op::withhold:
        proxy_.withhold_request(RequestMatch{"EVALSHA", "", name_}, 1);
        withheld_ = true;
        return "";
      case Op::deliver_withheld:
        deliver_withheld();
        withheld_ = false;
        return "";
      case Op::delay:
        proxy_.set_delay(Direction::to_client, wait, wait / 2);
        return "";
      case Op::subscriber_delay:
        proxy_.set_subscriber_delay(wait);
        return "";
      case Op::blackhole: {
        proxy_.set_blackhole(Direction::both, true);
        auto failure = checked_sleep(wait);
        proxy_.set_blackhole(Direction::both, false);
        return failure;
      }
      case Op::reset:
        outcome(std::to_string(proxy_.reset_connections()) + " reset");
        return "";
      case Op::sleep:
        return checked_sleep(wait);
    }
    return "";
  }

  static std::string outcome_text(const redisync::ReleaseResult& r) {
    switch (r.outcome) {
      case redisync::ReleaseOutcome::released: return "released";
      case redisync::ReleaseOutcome::still_held: return "still held";
      case redisync::ReleaseOutcome::not_held: return "not held";
      case redisync::ReleaseOutcome::lost: return "lost";
      case redisync::ReleaseOutcome::failed: return "failed (" + r.error + ")";
    }
    return "?";
  }

  /// The requests held back so far run on the server now (a late copy overtaken by its
  /// resend), except releases: a release copy older than its release record is a documented
  /// limit (docs/safety.md, "Retries are safe"), not what this test checks.
  void deliver_withheld() {
    const auto copies = proxy_.withheld();
    for (std::size_t i = delivered_; i < copies.size(); ++i) {
      bool release = false;
      for (const auto& arg : copies[i]) {
        if (arg.find("redisson_unlock_latch:") != std::string::npos) release = true;
      }
      if (release) {
        outcome("a release copy, not delivered");
        continue;
      }
      const auto reply = server_.command(copies[i]);
      outcome("delivered: " + reply.debug_string());
    }
    delivered_ = copies.size();
    proxy_.clear();  // the rule too, if it never matched
    proxy_.reset_connections();
  }

  /// Sleeps `d`, checking every 25 ms.
  std::string checked_sleep(Duration d) {
    const auto until = std::chrono::steady_clock::now() + d;
    for (int i = 0; i < 200 && std::chrono::steady_clock::now() < until; ++i) {
      if (auto failure = check(); !failure.empty()) return failure;
      std::this_thread::sleep_until(
          std::min(until, std::chrono::steady_clock::now() + std::chrono::milliseconds(25)));
    }
    return check();
  }

  /// Whether `client` believes now that `lock`'s hold of `owner` is its own: it was not told
  /// of a loss and its local deadline has not passed.
  static bool believes(Client& client, Subject& lock, std::int64_t owner) {
    const auto deadline = client.lease_deadline();
    return deadline && *deadline > std::chrono::steady_clock::now() && !lock.lost(owner);
  }

  /// A key's hash and expiry, for a report.
  std::string key_state(const std::string& key) {
    return key + " " + server_.command({"HGETALL", key}).debug_string() + " PTTL " +
           std::to_string(server_.command({"PTTL", key}).as_integer());
  }

  /// The lease bound for one Client: a single lock's against its key; a composite's member by
  /// member, each against the Client's deadline for that member's holds alone, while a call
  /// reported the composite held (`holds`) and it was not told that hold was lost
  /// (Subject::lost). Members a walk takes are the composite's own until it succeeds: a walk
  /// under way, or one that failed and is releasing what it took (a release whose reply is
  /// lost keeps its registration until its deadline), holds nothing a caller was told of, and
  /// the other side may hold those keys meanwhile; so are a late acquisition's holds that the
  /// composite releases after the hold it reported was lost.
  std::string lease_bound(const Client& client, int holds, const Subject& lock,
                          std::int64_t owner) {
    if (kind_.members == 0) return lease_bound_violation(client, server_, name_);
    if (holds == 0 || lock.lost(owner)) return "";
    for (const auto& key : keys_) {
      if (auto v = key_lease_bound_violation(client, server_, key); !v.empty()) return v;
    }
    return "";
  }

  /// The property, now.
  std::string check() {
    poll();
    if (auto v = lease_bound(*a_client_, a_holds_, *a_lock_, actor_.owner()); !v.empty()) {
      return "A: " + v;
    }
    if (auto v = lease_bound(*b_client_, b_holds_, *b_lock_, b_owner_); !v.empty()) {
      return "B: " + v;
    }
    // B's lock is exclusive (a lock, or the write side): A and B never hold it both.
    if (a_holds_ > 0 && b_holds_ > 0 && believes(*a_client_, *a_lock_, actor_.owner()) &&
        believes(*b_client_, *b_lock_, b_owner_)) {
      std::string state;
      for (const auto& key : keys_) state += " " + key_state(key);
      return "A and B both hold " + name_ + ":" + state;
    }
    return "";
  }

  const Kind& kind_;
  RedisServer& server_;
  FaultProxy& proxy_;
  std::uint64_t seed_;
  Rng rng_;
  std::string name_;
  std::vector<std::string> keys_;  // the server keys of the lock (a composite's members)
  std::string log_;
  ActorThread actor_;
  std::unique_ptr<Client> a_client_, b_client_;
  std::unique_ptr<Subject> a_lock_, b_lock_;
  std::int64_t b_owner_ = 0;
  int a_holds_ = 0, b_holds_ = 0;
  std::shared_ptr<Pending> a_pending_, b_pending_;
  bool withheld_ = false;
  std::size_t delivered_ = 0;
};

struct Param {
  const Kind* kind;
  Handoff mode;
};

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(info.param.kind->name) +
         (info.param.mode == Handoff::grant ? "_grant" : "_wake");
}

std::vector<Param> all_params() {
  std::vector<Param> out;
  for (const auto& k : kKinds) {
    for (auto mode : {Handoff::wake, Handoff::grant}) out.push_back({&k, mode});
  }
  return out;
}

class LeaseProperty : public ::testing::TestWithParam<Param> {};

TEST_P(LeaseProperty, LocalDeadlineNeverPastServerExpiryAndNoTwoHolders) {
  const auto& [kind, mode] = GetParam();
  const long one_seed = env_long("REDISYNC_PROPERTY_SEED", 0);
  const long count =
      one_seed > 0 ? 1 : env_long("REDISYNC_PROPERTY_SCHEDULES", redisync::test::load_count(3));
  const long first = one_seed > 0 ? one_seed : env_long("REDISYNC_PROPERTY_FIRST_SEED", 1);
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::seconds(env_long("REDISYNC_PROPERTY_SECONDS", 3600));
  // Schedules run `parallel` at a time (REDISYNC_PROPERTY_PARALLEL, default 1): each worker has
  // its own fault proxy and draws the next seed; the server is shared (each schedule has its
  // own lock). A schedule mostly waits on leases and timeouts, so a long run (10,000 per kind)
  // goes many times faster; a failure's server story may then miss commands (the slow log is
  // shared): rerun its seed alone for the whole story.
  const long parallel = std::clamp(env_long("REDISYNC_PROPERTY_PARALLEL", 1), 1L, 128L);
  RedisServer server;
  // Every command into the slow log: a failure's report shows what the server ran.
  server.command({"CONFIG", "SET", "slowlog-log-slower-than", "0"});
  server.command({"CONFIG", "SET", "slowlog-max-len", parallel > 1 ? "100000" : "1000"});
  std::mutex mutex;  // guards next, ran and failures
  long next = 0;
  long ran = 0;
  std::vector<std::string> failures;
  const auto started = std::chrono::steady_clock::now();
  const auto worker = [&] {
    FaultProxy proxy(server.port());
    for (;;) {
      std::uint64_t seed = 0;
      {
        std::lock_guard g(mutex);
        if (next >= count || failures.size() >= 20 || std::chrono::steady_clock::now() >= until) {
          return;
        }
        seed = static_cast<std::uint64_t>(first + next++);
      }
      std::string failure;
      if (parallel == 1) server.command({"SLOWLOG", "RESET"});
      {
        Schedule schedule(*kind, mode, server, proxy, seed);
        Rng length(seed ^ 0x5eedull);
        failure = schedule.run(8 + length.below(9));
      }
      std::lock_guard g(mutex);
      ++ran;
      if (!failure.empty()) {
        std::cout << "[ FAILED SCHEDULE ] " << failure << std::endl;
        failures.push_back(failure);
      }
    }
  };
  std::vector<std::thread> workers;
  for (long i = 1; i < parallel; ++i) workers.emplace_back(worker);
  worker();
  for (auto& t : workers) t.join();
  const auto took =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  std::cout << "[ info ] " << kind->name << (mode == Handoff::grant ? " grant" : " wake") << ": "
            << ran << " schedules from seed " << first << " (" << parallel << " at a time) in "
            << took.count() << " ms, "
            << failures.size() << " failed" << std::endl;
  EXPECT_TRUE(failures.empty()) << failures.size() << " schedules failed; the first:\n"
                                << (failures.empty() ? "" : failures.front());
}

INSTANTIATE_TEST_SUITE_P(Kinds, LeaseProperty, ::testing::ValuesIn(all_params()), param_name);

}  // namespace
