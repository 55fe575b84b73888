// SPDX-License-Identifier: Apache-2.0
// Direct handoff (Config::handoff = grant, src/sync/acquire/grant.h, docs/wire-format.md "Direct
// handoff") against a real server: the release gives the lock to a registered waiter, whose
// lock() returns without an attempt of its own; a grant to a dead waiter frees within the
// grant lease; a waiter giving up as it is granted never leaves the lock held by nobody;
// Redisson-layout waiters are never granted; FencedLock issues a token per grant; FairLock
// grants to its queue head only; a closed client's waits are deregistered. NonReentrantLock
// and NonReentrantFairLock are granted as Lock and FairLock are, and still refuse a re-entry.
#include <gtest/gtest.h>

#include <asio/use_future.hpp>
#include <atomic>
#include <functional>
#include <future>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "redisync/metrics.h"
#include "redisync/redisync.h"
#include "grant_util.h"
#include "support/java_layout.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"
#include "support/worker.h"

using namespace std::chrono_literals;
using redisync::test::config_for;
using redisync::test::JavaLayoutClient;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;
using redisync::test::grant::close_mid_wait;
using redisync::test::grant::fair_registrations;
using redisync::test::grant::field_of;
using redisync::test::grant::give_up_as_granted_rounds;
using redisync::test::grant::grant_config;
using redisync::test::grant::granted_hold_lasts_its_own_lease;
using redisync::test::grant::lock_registrations;
using redisync::test::grant::server_ms;

namespace {

// True once `field` is registered for a grant of `name`.
bool registered(RedisServer& server, const std::string& name, const std::string& field) {
  return wait_until(
      [&] {
        return !server.command({"ZSCORE", lock_registrations(name), field}).is_nil();
      },
      5s);
}

// Counts what the Metrics hook reports: acquire attempts and wake-ups.
struct Counts : redisync::Metrics {
  std::mutex m;
  std::vector<double> attempts;
  long long wake_ups = 0;
  void increment(const redisync::MetricLabels&, redisync::Counter c, std::uint64_t n) noexcept override {
    std::lock_guard g(m);
    if (c == redisync::Counter::wake_ups) wake_ups += static_cast<long long>(n);
  }
  void observe(const redisync::MetricLabels&, redisync::Histogram h, double v) noexcept override {
    std::lock_guard g(m);
    if (h == redisync::Histogram::attempts_per_acquire) attempts.push_back(v);
  }
};

// True once `field` is registered for a grant of the fair lock `name`.
bool fair_registered(RedisServer& server, const std::string& name, const std::string& field) {
  return wait_until(
      [&] { return server.command({"HEXISTS", fair_registrations(name), field}).as_integer() == 1; },
      5s);
}

// `field`'s deadline in the fair lock's timeout set, -1 when absent.
long long score(RedisServer& server, const std::string& name, const std::string& field) {
  auto r = server.command({"ZSCORE", JavaLayoutClient::fair_timeouts(name), field});
  return r.is_nil() ? -1 : std::stoll(r.as_string());
}

// The kinds the tests below run on: the unfair ones register in redisync_lock_grant, the fair
// ones in redisync_fair_grant.
enum class Kind { lock, fair, non_reentrant, non_reentrant_fair };

bool is_fair(Kind kind) { return kind == Kind::fair || kind == Kind::non_reentrant_fair; }

// A handle on `client`'s lock of `kind` (the kind travels in the handle: BasicLock is enough).
redisync::BasicLock lock_of(redisync::Client& client, Kind kind, const std::string& name) {
  switch (kind) {
    case Kind::lock: return client.lock(name);
    case Kind::fair: return client.fair_lock(name);
    case Kind::non_reentrant: return client.non_reentrant_lock(name);
    case Kind::non_reentrant_fair: return client.non_reentrant_fair_lock(name);
  }
  return client.lock(name);
}

// Whether `field` is registered for a grant of `name`, a lock of `kind`, now.
bool registered_now(RedisServer& server, Kind kind, const std::string& name,
                    const std::string& field) {
  if (is_fair(kind)) {
    return server.command({"HEXISTS", fair_registrations(name), field}).as_integer() == 1;
  }
  return !server.command({"ZSCORE", lock_registrations(name), field}).is_nil();
}

// True once `field` is registered for a grant of `name`, a lock of `kind`.
bool registered(RedisServer& server, Kind kind, const std::string& name,
                const std::string& field) {
  return wait_until([&] { return registered_now(server, kind, name, field); }, 5s);
}

// For the grant_util.h helpers: makes a client's lock of `kind`; says whether a field is
// registered now.
auto lock_maker(Kind kind) {
  return [kind](redisync::Client& c, const std::string& n) { return lock_of(c, kind, n); };
}
auto registration_check(Kind kind) {
  return [kind](RedisServer& s, const std::string& n, const std::string& f) {
    return registered_now(s, kind, n, f);
  };
}

// A waiter on its own thread, of a lock of `kind`: publishes its field, waits up to `wait`,
// runs `on_held` while it holds the lock, and answers whether it got the lock. With `lease`
// set, it waits with that fixed lease (else the watchdog's).
struct Waiter {
  Kind kind = Kind::fair;
  std::chrono::milliseconds lease{0};
  std::string field = {};
  std::atomic<bool> known{false};
  std::future<bool> done = {};
  void start(redisync::Client& client, const std::string& name, std::chrono::milliseconds wait,
             std::function<void()> on_held = nullptr) {
    done = std::async(std::launch::async, [this, &client, name, wait, on_held] {
      auto lock = lock_of(client, kind, name);
      field = field_of(client);
      known = true;
      const bool got =
          lease.count() > 0 ? lock.try_lock_for(wait, lease) : lock.try_lock_for(wait);
      if (got && on_held) on_held();
      if (got) lock.unlock();
      return got;
    });
    ASSERT_TRUE(wait_until([&] { return known.load(); }, 5s));
  }
};

// A release grants the lock to a registered waiter (the fair kinds: the registered head), whose
// lock() returns on the grant message: no attempt after the registering one, no wake-up, its
// field at 1 on the grant lease.
void release_grants_the_lock(Kind kind) {
  RedisServer server;
  auto counts = std::make_shared<Counts>();
  // A long grant lease: the waiter refreshes its registration every third of it, so within
  // this test it attempts exactly twice (before and after subscribing) and never again.
  auto waiter_cfg = grant_config(server, 60000ms);
  waiter_cfg.metrics = counts;
  redisync::Client holder(grant_config(server, 60000ms)), waiter(waiter_cfg);
  const auto name = unique_name("grant:");
  auto held = lock_of(holder, kind, name);
  held.lock();
  std::string in_hash;
  long long pttl = 0;
  Waiter w{.kind = kind, .lease = 90000ms};
  w.start(waiter, name, 20s, [&] {
    auto r = server.command({"HGET", name, w.field});
    in_hash = r.is_nil() ? "" : r.as_string();
    // The extension to the waiter's 90 s lease is sent after a third of the grant lease
    // (20 s): before it, the hold has the grant lease.
    pttl = server.command({"PTTL", name}).as_integer();
  });
  ASSERT_TRUE(registered(server, kind, name, w.field));
  held.unlock();
  ASSERT_EQ(w.done.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(w.done.get());
  EXPECT_EQ(in_hash, "1");
  EXPECT_GT(pttl, 0);
  EXPECT_LE(pttl, 60000);  // the grant lease (60 s), not yet extended to 90 s
  // No attempt after the registering one, and no wake-up: the grant completed the wait.
  std::lock_guard g(counts->m);
  ASSERT_EQ(counts->attempts.size(), 1u);
  EXPECT_EQ(counts->attempts[0], 2.0);
  EXPECT_EQ(counts->wake_ups, 0);
  // Nothing left: registrations, and (fair kinds) Redisson's queue.
  EXPECT_EQ(server
                .command({"EXISTS", lock_registrations(name), fair_registrations(name),
                          JavaLayoutClient::fair_queue(name)})
                .as_integer(),
            0);
}

}  // namespace

TEST(GrantTest, ReleaseGrantsTheLockToARegisteredWaiter) { release_grants_the_lock(Kind::lock); }

TEST(NonReentrantGrantTest, ReleaseGrantsTheLockToARegisteredWaiter) {
  release_grants_the_lock(Kind::non_reentrant);
}

// A waiter of `kind` on `waiter_cfg` (grant lease 600 ms) registers, and the lock is released
// 3 s later (five grant leases): it holds the grant, with `attempts` attempts in all and no
// wake-up.
void take_a_grant_long_after_the_registration(RedisServer& server, Kind kind,
                                              redisync::Config waiter_cfg, double attempts) {
  auto counts = std::make_shared<Counts>();
  waiter_cfg.metrics = counts;
  redisync::Client holder(grant_config(server, 600ms)), waiter(waiter_cfg);
  const auto name = unique_name("grant-late:");
  auto held = lock_of(holder, kind, name);
  held.lock(60s);  // a fixed lease: the holder sends nothing while the waiter sleeps
  std::string in_hash;
  Waiter w{.kind = kind, .lease = 30000ms};
  w.start(waiter, name, 20s, [&] {
    auto r = server.command({"HGET", name, w.field});
    in_hash = r.is_nil() ? "" : r.as_string();
  });
  ASSERT_TRUE(registered(server, kind, name, w.field));
  // 2/3 of the grant lease after the registration, a grant once had to be checked by an
  // attempt.
  std::this_thread::sleep_for(3s);
  held.unlock();
  ASSERT_EQ(w.done.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(w.done.get());
  EXPECT_EQ(in_hash, "1");
  std::lock_guard g(counts->m);
  ASSERT_EQ(counts->attempts.size(), 1u);
  EXPECT_EQ(counts->attempts[0], attempts);
  EXPECT_EQ(counts->wake_ups, 0);
}

// A registered waiter does not re-attempt to keep its grant fast: it refreshes its registration
// only before it lapses (a third of 10 s), and a grant that comes long after its registration
// is still taken on the message, counted from the pub/sub heartbeat answered before it: two
// attempts (before and after subscribing) and no other, none to refresh, none to take. Once
// each waiter re-attempted every third of the grant lease (here 200 ms), so that a grant would
// be recent enough: 100,000 waiters made 74,000 script calls a second (issue 34).
TEST(GrantTest, AGrantLongAfterTheRegistrationIsTakenOnItsMessage) {
  RedisServer server;
  take_a_grant_long_after_the_registration(server, Kind::lock, grant_config(server, 600ms), 2);
}

TEST(NonReentrantGrantTest, AGrantLongAfterTheRegistrationIsTakenOnItsMessage) {
  RedisServer server;
  take_a_grant_long_after_the_registration(server, Kind::non_reentrant, grant_config(server, 600ms),
                                           2);
}

// A user who may not PING has no heartbeat: a grant long after the registration is taken by
// one attempt (the grant mark names it), not lost and not waited out: three attempts, before
// and after subscribing and the taking one.
TEST(GrantTest, AUserWhoMayNotPingTakesALateGrantByAnAttempt) {
  RedisServer server;
  auto waiter_cfg =
      redisync::Config::from_url(server.add_user("noping", {"~*", "&*", "+@all", "-ping"}));
  waiter_cfg.handoff = redisync::Handoff::grant;
  waiter_cfg.grant_lease = 600ms;
  take_a_grant_long_after_the_registration(server, Kind::lock, waiter_cfg, 3);
}

// A grant wakes only the process it is for: it is published on the grantee Client's own grant
// channel, never on one every waiting Client listens to (with 8 waiting processes on one CPU,
// a broadcast grant ran the grantee after the others had handled the message: the handoff then
// took as long as wake-and-retry).
TEST(GrantTest, AGrantIsAnnouncedOnlyToTheGranteesClient) {
  RedisServer server;
  redisync::Client holder(grant_config(server, 60000ms)), first(grant_config(server, 60000ms)),
      second(grant_config(server, 60000ms));
  const auto name = unique_name("grant:");
  const std::string prefix = "redisync_grant__channel:{" + name + "}";
  redisync::test::ChannelListener shared(server, prefix);
  redisync::test::ChannelListener to_first(server, prefix + ":" + first.id());
  redisync::test::ChannelListener to_second(server, prefix + ":" + second.id());
  auto held = holder.lock(name);
  held.lock();
  auto wait_in = [&](redisync::Client& c, std::string& field, std::atomic<bool>& known,
                     std::atomic<bool>& release) {
    auto lock = c.lock(name);
    field = field_of(c);
    known = true;
    const bool got = lock.try_lock_for(20s);
    for (int i = 0; i < 2000 && !release; ++i) std::this_thread::sleep_for(5ms);  // <= 10 s
    if (got) lock.unlock();
    return got;
  };
  std::string first_field, second_field;
  std::atomic<bool> first_known{false}, second_known{false}, release_first{false},
      release_second{false};
  auto a = std::async(std::launch::async, [&] {
    return wait_in(first, first_field, first_known, release_first);
  });
  ASSERT_TRUE(wait_until([&] { return first_known.load(); }, 5s));
  ASSERT_TRUE(registered(server, name, first_field));
  auto b = std::async(std::launch::async, [&] {
    return wait_in(second, second_field, second_known, release_second);
  });
  ASSERT_TRUE(wait_until([&] { return second_known.load(); }, 5s));
  ASSERT_TRUE(registered(server, name, second_field));

  // "<field> <grant lease ms> <grant id> <attempt>": the releaser's grant lease, which the
  // grantee counts, and the acquisition and registration the grant is for.
  auto is_grant_to = [](const std::optional<std::string>& message, const std::string& field) {
    std::istringstream words(message.value_or(""));
    std::string f, lease, id, attempt, more;
    words >> f >> lease >> id >> attempt;
    return f == field && lease == "60000" && id.size() == 16 && !attempt.empty() &&
           !(words >> more);
  };
  held.unlock();  // grants to the earliest registration: the first waiter
  EXPECT_TRUE(is_grant_to(to_first.next_message(5000ms), first_field));
  EXPECT_EQ(to_second.next_message(300ms), std::nullopt) << "the grant woke another Client";
  EXPECT_EQ(shared.next_message(10ms), std::nullopt) << "the grant was broadcast";
  release_first = true;
  EXPECT_TRUE(a.get());
  EXPECT_TRUE(is_grant_to(to_second.next_message(5000ms), second_field));
  EXPECT_EQ(to_first.next_message(300ms), std::nullopt);
  release_second = true;
  EXPECT_TRUE(b.get());
}

TEST(GrantTest, AGrantedHoldIsExtendedToItsLeaseAndNotReportedLost) {
  RedisServer server;
  redisync::Client holder(grant_config(server, 300ms)), waiter(grant_config(server, 300ms));
  std::atomic<int> lost{0};
  waiter.on_lock_lost([&](const redisync::LockLostEvent&) { ++lost; });
  const auto name = unique_name("grant:");
  auto held = holder.lock(name);
  held.lock();
  std::string waiter_field;
  std::atomic<bool> known{false};
  auto done = std::async(std::launch::async, [&] {
    auto lock = waiter.lock(name);
    waiter_field = field_of(waiter);
    known = true;
    const bool got = lock.try_lock_for(20s, 20s);  // fixed lease 20 s
    // Extended from the 300 ms grant lease to 20 s, then still ours after several grant leases.
    const bool extended =
        got && wait_until([&] { return server.command({"PTTL", name}).as_integer() > 5000; }, 5s);
    std::this_thread::sleep_for(1s);
    const bool still = got && lock.is_held_by_current_thread();
    if (got) lock.unlock_checked();
    return got && extended && still;
  });
  ASSERT_TRUE(wait_until([&] { return known.load(); }, 5s));
  ASSERT_TRUE(registered(server, name, waiter_field));
  held.unlock();
  ASSERT_EQ(done.wait_for(15s), std::future_status::ready);
  EXPECT_TRUE(done.get());
  EXPECT_EQ(lost.load(), 0);
}

TEST(GrantTest, AGrantedHoldLastsItsOwnLeaseNotTheLongerGrantLease) {
  granted_hold_lasts_its_own_lease(
      [](redisync::Client& c, const std::string& n) { return c.lock(n); },
      [](RedisServer& s, const std::string& n, const std::string& f) {
        return registered(s, n, f);
      });
}

TEST(GrantTest, AGrantedFencedHoldLastsItsOwnLeaseNotTheLongerGrantLease) {
  granted_hold_lasts_its_own_lease(
      [](redisync::Client& c, const std::string& n) { return c.fenced_lock(n); },
      [](RedisServer& s, const std::string& n, const std::string& f) {
        return registered(s, n, f);
      });
}

TEST(GrantTest, TheReleasersShorterGrantLeaseBoundsTheGrantedHold) {
  redisync::test::grant::releasers_grant_lease_bounds_the_granted_hold(
      [](redisync::Client& c, const std::string& n) { return c.lock(n); },
      [](redisync::Lock& l) { return l; },
      [](RedisServer& s, const std::string& n, const std::string& f) {
        return !s.command({"ZSCORE", lock_registrations(n), f}).is_nil();
      });
}

TEST(GrantTest, TheReleasersShorterGrantLeaseBoundsTheGrantedFencedHold) {
  redisync::test::grant::releasers_grant_lease_bounds_the_granted_hold(
      [](redisync::Client& c, const std::string& n) { return c.fenced_lock(n); },
      [](redisync::FencedLock& l) { return l; },
      [](RedisServer& s, const std::string& n, const std::string& f) {
        return !s.command({"ZSCORE", lock_registrations(n), f}).is_nil();
      });
}

TEST(FairGrantTest, TheReleasersShorterGrantLeaseBoundsTheGrantedHold) {
  redisync::test::grant::releasers_grant_lease_bounds_the_granted_hold(
      [](redisync::Client& c, const std::string& n) { return c.fair_lock(n); },
      [](redisync::FairLock& l) { return l; },
      [](RedisServer& s, const std::string& n, const std::string& f) {
        return s.command({"HEXISTS", fair_registrations(n), f}).as_integer() == 1;
      });
}

TEST(GrantTest, AGrantTakenByAnAttemptLastsItsOwnLease) {
  redisync::test::grant::grant_taken_by_attempt_lasts_its_own_lease(
      [](redisync::Client& c, const std::string& n) { return c.lock(n); },
      "redisync_lock_grant:", "");
}

TEST(FairGrantTest, AGrantedHoldLastsItsOwnLeaseNotTheLongerGrantLease) {
  granted_hold_lasts_its_own_lease(
      [](redisync::Client& c, const std::string& n) { return c.fair_lock(n); },
      [](RedisServer& s, const std::string& n, const std::string& f) {
        return fair_registered(s, n, f);
      });
}

namespace {

void wake_mode_neither_registers_nor_grants(Kind kind) {
  RedisServer server;
  auto cfg = config_for(server);
  cfg.handoff = redisync::Handoff::wake;  // also under REDISYNC_TEST_HANDOFF=grant
  redisync::Client holder(cfg), waiter(cfg);
  const auto name = unique_name("grant:");
  auto held = lock_of(holder, kind, name);
  held.lock();
  auto done = std::async(std::launch::async, [&] {
    auto lock = lock_of(waiter, kind, name);
    const bool got = lock.try_lock_for(20s);
    if (got) lock.unlock();
    return got;
  });
  ASSERT_TRUE(redisync::test::wait_until(
      [&] {
        auto r = server.command({"PUBSUB", "NUMSUB", "redisson_lock__channel:{" + name + "}"});
        return r.elements[1].as_integer() == 1;
      },
      5s));
  EXPECT_EQ(server.command({"EXISTS", lock_registrations(name)}).as_integer(), 0);
  held.unlock();
  EXPECT_TRUE(done.get());
}

// A release grants the lock to a registered waiter that is gone (it registered before the live
// one): the lock frees within the grant lease, and the live waiter gets it.
void grant_to_a_dead_waiter_frees(Kind kind) {
  RedisServer server;
  redisync::Client holder(grant_config(server, 300ms)), waiter(grant_config(server, 300ms));
  const auto name = unique_name("grant:");
  auto held = lock_of(holder, kind, name);
  held.lock();
  bool mine = false;
  Waiter w{.kind = kind};
  w.start(waiter, name, 20s,
          [&] { mine = server.command({"HGET", name, w.field}).as_string() == "1"; });
  ASSERT_TRUE(registered(server, name, w.field));
  // Registered before the live one (its place in the order), live for 5 s more.
  const std::string dead = "0123dead-0000-0000-0000-000000000000:7";
  const long long now = server_ms(server);
  server.command({"ZADD", lock_registrations(name), std::to_string(now - 1000), dead});
  server.command({"HSET", "redisync_lock_grant_id:{" + name + "}", dead,
                  "deadbeefdeadbeef:4:" + std::to_string(now + 5000)});
  held.unlock();
  // The dead waiter was granted: an ordinary hold on the short grant lease.
  EXPECT_EQ(server.command({"HGET", name, dead}).as_string(), "1");
  EXPECT_LE(server.command({"PTTL", name}).as_integer(), 300);
  ASSERT_EQ(w.done.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(w.done.get());
  EXPECT_TRUE(mine);
}

}  // namespace

TEST(GrantTest, WakeModeNeitherRegistersNorGrants) {
  wake_mode_neither_registers_nor_grants(Kind::lock);
}

TEST(NonReentrantGrantTest, WakeModeNeitherRegistersNorGrants) {
  wake_mode_neither_registers_nor_grants(Kind::non_reentrant);
}

TEST(GrantTest, AGrantToADeadWaiterFreesWithinTheGrantLease) {
  grant_to_a_dead_waiter_frees(Kind::lock);
}

TEST(NonReentrantGrantTest, AGrantToADeadWaiterFreesWithinTheGrantLease) {
  grant_to_a_dead_waiter_frees(Kind::non_reentrant);
}

TEST(GrantTest, AWaiterGivingUpAsItIsGrantedNeverLeavesTheLockHeldByNobody) {
  give_up_as_granted_rounds([](redisync::Client& c, const std::string& n) { return c.lock(n); },
                            [](redisync::Lock& l, int) { l.lock(); },
                            [](redisync::Lock& l, int) { l.unlock(); },
                            [](RedisServer& s, const std::string& n, const std::string& f) {
                              return !s.command({"ZSCORE", lock_registrations(n), f}).is_nil();
                            });
}

TEST(GrantTest, RedissonLayoutWaitersAreNeverGrantedAndStillGetTheLock) {
  RedisServer server;
  redisync::Client holder(grant_config(server)), waiter(grant_config(server));
  JavaLayoutClient java(server);
  const auto name = unique_name("grant:");
  auto held = holder.lock(name);
  held.lock();
  // A Java waiter: it attempted (PTTL) and listens on Redisson's channel.
  redisync::test::ChannelListener java_ear(server, JavaLayoutClient::lock_channel(name));
  ASSERT_FALSE(java.lock_acquire(name, 30000, 5).is_nil());
  std::string waiter_field;
  std::atomic<bool> known{false};
  std::promise<void> release_ours;
  auto ours = std::async(std::launch::async, [&] {
    auto lock = waiter.lock(name);
    waiter_field = field_of(waiter);
    known = true;
    const bool got = lock.try_lock_for(20s);
    release_ours.get_future().wait();
    if (got) lock.unlock();
    return got;
  });
  ASSERT_TRUE(wait_until([&] { return known.load(); }, 5s));
  ASSERT_TRUE(registered(server, name, waiter_field));
  held.unlock();
  ASSERT_TRUE(wait_until([&] { return server.command({"HGET", name, waiter_field}).kind == redisync::test::Reply::Kind::string; }, 5s));
  EXPECT_TRUE(server.command({"HGET", name, java.owner(5)}).is_nil());
  // Java still excluded, and it heard no foreign message on its channel.
  EXPECT_FALSE(java.lock_acquire(name, 30000, 5).is_nil());
  release_ours.set_value();
  EXPECT_TRUE(ours.get());
  // Nobody registered: the release published Redisson's "0", and Java gets the lock.
  EXPECT_EQ(java_ear.next_message(5s), "0");
  EXPECT_TRUE(java.lock_acquire(name, 30000, 5).is_nil());
  EXPECT_EQ(java.lock_release(name, 5, 30000).as_integer(), 1);
}

TEST(GrantTest, FencedLockIssuesAGreaterTokenAtEachGrant) {
  RedisServer server;
  redisync::Client a(grant_config(server)), b(grant_config(server));
  const auto name = unique_name("grant-fenced:");
  auto fa = a.fenced_lock(name);
  const auto first = fa.lock_and_get_token();
  std::string b_field;
  std::atomic<bool> known{false};
  auto other = std::async(std::launch::async, [&] {
    auto fb = b.fenced_lock(name);
    b_field = field_of(b);
    known = true;
    auto token = fb.try_lock_and_get_token_for(20s);
    if (token) fb.unlock();
    return token;
  });
  ASSERT_TRUE(wait_until([&] { return known.load(); }, 5s));
  ASSERT_TRUE(registered(server, name, b_field));
  fa.unlock();
  auto second = other.get();
  ASSERT_TRUE(second.has_value());
  EXPECT_GT(*second, first);
  EXPECT_EQ(fa.token(), *second);  // issued at the grant, not again at the take
  const auto third = fa.lock_and_get_token();
  EXPECT_GT(third, *second);
  fa.unlock();
}

TEST(GrantTest, BadHandoffSettingIsAConfigError) {
  try {
    redisync::Config::from_url("redis://127.0.0.1:6379?handoff=push");
    FAIL() << "no ConfigError";
  } catch (const redisync::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("handoff"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("push"), std::string::npos) << e.what();
  }
  EXPECT_THROW(redisync::Config::from_url("redis://127.0.0.1:6379?handoff=grant&grant_lease=10ms"),
               redisync::ConfigError);
  const auto cfg =
      redisync::Config::from_url("redis://127.0.0.1:6379?handoff=grant&grant_lease=500ms");
  EXPECT_EQ(cfg.handoff, redisync::Handoff::grant);
  EXPECT_EQ(cfg.grant_lease.count(), 500);
  EXPECT_EQ(redisync::Config::from_url("redis://127.0.0.1:6379").handoff, redisync::Handoff::wake);
}

// --- FairLock (docs/wire-format.md §18 "FairLock"): only a registered, live queue head is
// granted, in queue order, with Redisson's deadline bookkeeping. ---

TEST(FairGrantTest, ReleaseGrantsTheLockToTheRegisteredHead) {
  release_grants_the_lock(Kind::fair);
}

TEST(NonReentrantFairGrantTest, ReleaseGrantsTheLockToTheRegisteredHead) {
  release_grants_the_lock(Kind::non_reentrant_fair);
}

namespace {

void fair_wake_mode_does_not_register(Kind kind) {
  RedisServer server;
  auto cfg = config_for(server);
  cfg.handoff = redisync::Handoff::wake;  // also under REDISYNC_TEST_HANDOFF=grant
  redisync::Client holder(cfg), waiter(cfg);
  const auto name = unique_name("fair-grant:");
  auto held = lock_of(holder, kind, name);
  held.lock();
  Waiter w{.kind = kind};
  w.start(waiter, name, 20s);
  ASSERT_TRUE(wait_until(
      [&] { return server.command({"LLEN", JavaLayoutClient::fair_queue(name)}).as_integer() == 1; },
      5s));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(server.command({"EXISTS", fair_registrations(name)}).as_integer(), 0);
  held.unlock();
  EXPECT_TRUE(w.done.get());
}

}  // namespace

TEST(FairGrantTest, WakeModeDoesNotRegister) { fair_wake_mode_does_not_register(Kind::fair); }

TEST(NonReentrantFairGrantTest, WakeModeDoesNotRegister) {
  fair_wake_mode_does_not_register(Kind::non_reentrant_fair);
}

TEST(FairGrantTest, GrantsKeepTheQueueOrder) {
  RedisServer server;
  redisync::Client holder(grant_config(server));
  const auto name = unique_name("fair-grant:");
  auto held = holder.fair_lock(name);
  held.lock();
  constexpr int kWaiters = 4;
  std::vector<std::unique_ptr<redisync::Client>> clients;
  std::vector<std::unique_ptr<Waiter>> waiters;
  std::mutex m;
  std::vector<int> order;
  for (int i = 0; i < kWaiters; ++i) {
    clients.push_back(std::make_unique<redisync::Client>(grant_config(server)));
    waiters.push_back(std::make_unique<Waiter>());
    waiters.back()->start(*clients.back(), name, 30s, [&, i] {
      std::lock_guard g(m);
      order.push_back(i);
    });
    // In the queue (and registered) before the next one comes.
    ASSERT_TRUE(fair_registered(server, name, waiters.back()->field));
  }
  held.unlock();
  for (auto& w : waiters) {
    ASSERT_EQ(w->done.wait_for(20s), std::future_status::ready);
    EXPECT_TRUE(w->done.get());
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(FairGrantTest, AGrantMovesTheRemainingDeadlinesByTheHeadsAllowance) {
  // Redisson's acquire at the head subtracts the acquirer's allowance from every remaining
  // waiter's deadline (§4.3 step 2); a grant to the head must do the same with the head's.
  RedisServer server;
  redisync::Client holder(grant_config(server)), waiter(grant_config(server));
  JavaLayoutClient java(server);
  const auto name = unique_name("fair-grant:");
  auto held = holder.fair_lock(name);
  held.lock();
  Waiter w;  // destroyed after the promise: a failed assertion never leaves it waiting
  std::promise<void> release_ours;
  auto released = release_ours.get_future().share();
  w.start(waiter, name, 20s, [released] { released.wait(); });  // allowance 5 000 ms (Config)
  ASSERT_TRUE(fair_registered(server, name, w.field));
  // A Java waiter queues behind (allowance 300 000 ms) and then sleeps: it does not re-poll.
  ASSERT_FALSE(java.fair_acquire(name, 30000, 5, true).is_nil());
  const long long before = score(server, name, java.owner(5));
  ASSERT_GT(before, 0);
  redisync::test::ChannelListener java_ear(server, JavaLayoutClient::fair_channel(name, java.owner(5)));
  held.unlock();
  ASSERT_TRUE(wait_until([&] { return server.command({"HGET", name, w.field}).kind == redisync::test::Reply::Kind::string; }, 5s));
  EXPECT_EQ(score(server, name, java.owner(5)), before - 5000);
  EXPECT_EQ(score(server, name, w.field), -1);  // the head left the timeout set and the queue
  EXPECT_EQ(server.command({"LRANGE", JavaLayoutClient::fair_queue(name), "0", "-1"}).elements.size(), 1u);
  // Our release finds a Java head: it is woken with Redisson's "0", never granted.
  release_ours.set_value();
  EXPECT_TRUE(w.done.get());
  EXPECT_EQ(java_ear.next_message(5s), "0");
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
  EXPECT_TRUE(java.fair_acquire(name, 30000, 5, true).is_nil());
  EXPECT_EQ(java.fair_release(name, 5, 30000).as_integer(), 1);
}

TEST(FairGrantTest, AJavaHeadIsWokenNotGrantedAndTheRedisyncWaitersBehindAreGrantedLater) {
  RedisServer server;
  // A 20 s grant lease: below the 30 s watchdog lease, which b's extension sets only later.
  redisync::Client holder(grant_config(server, 20000ms)), a(grant_config(server, 20000ms)),
      b(grant_config(server, 20000ms));
  JavaLayoutClient java(server);
  const auto name = unique_name("fair-grant:");
  auto held = holder.fair_lock(name);
  held.lock();
  // The Java waiter is the head, two redisync waiters queue behind it. (A small allowance:
  // its acquire moves everyone behind it by that much, as Redisson's does.)
  ASSERT_FALSE(java.fair_acquire(name, 30000, 5, true, 5000).is_nil());
  redisync::test::ChannelListener java_ear(server, JavaLayoutClient::fair_channel(name, java.owner(5)));
  std::atomic<long long> b_pttl{0};
  Waiter wa, wb;
  wa.start(a, name, 30s);
  ASSERT_TRUE(fair_registered(server, name, wa.field));
  wb.start(b, name, 30s, [&] { b_pttl = server.command({"PTTL", name}).as_integer(); });
  ASSERT_TRUE(fair_registered(server, name, wb.field));
  held.unlock();
  EXPECT_EQ(java_ear.next_message(5s), "0");
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);  // woken, not granted
  ASSERT_TRUE(java.fair_acquire(name, 30000, 5, true, 5000).is_nil());
  // The Java release wakes a (its channel), which then acquires by an attempt; a's release
  // grants to b.
  EXPECT_EQ(java.fair_release(name, 5, 30000).as_integer(), 1);
  ASSERT_EQ(wa.done.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(wa.done.get());
  ASSERT_EQ(wb.done.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(wb.done.get());
  // b's hold has the grant lease: granted (an acquire of its own sets the 30 s lease).
  EXPECT_GT(b_pttl.load(), 0);
  EXPECT_LE(b_pttl.load(), 20000);
}

namespace {

// A granted queue head that is gone frees the lock within the grant lease; the next head gets it.
void dead_granted_head_frees(Kind kind) {
  RedisServer server;
  redisync::Client holder(grant_config(server, 300ms)), waiter(grant_config(server, 300ms));
  const auto name = unique_name("fair-grant:");
  auto held = lock_of(holder, kind, name);
  held.lock();
  // A registered head whose process is gone: queued, deadline far ahead, registered live.
  const std::string dead = "0123dead-0000-0000-0000-000000000000:7";
  const long long now = server_ms(server);
  server.command({"RPUSH", JavaLayoutClient::fair_queue(name), dead});
  server.command({"ZADD", JavaLayoutClient::fair_timeouts(name), std::to_string(now + 60000), dead});
  server.command({"HSET", fair_registrations(name), dead,
                  std::to_string(now + 8000) + ":60000:deadbeefdeadbeef:4"});
  Waiter w{.kind = kind};
  w.start(waiter, name, 20s);
  ASSERT_TRUE(fair_registered(server, name, w.field));
  held.unlock();
  // The dead head was granted: an ordinary hold on the short grant lease.
  EXPECT_EQ(server.command({"HGET", name, dead}).as_string(), "1");
  EXPECT_LE(server.command({"PTTL", name}).as_integer(), 300);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(w.done.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(w.done.get());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1500ms);
}

}  // namespace

TEST(FairGrantTest, ADeadGrantedHeadFreesWithinTheGrantLeaseAndTheNextGetsTheLock) {
  dead_granted_head_frees(Kind::fair);
}

TEST(NonReentrantFairGrantTest, ADeadGrantedHeadFreesWithinTheGrantLeaseAndTheNextGetsTheLock) {
  dead_granted_head_frees(Kind::non_reentrant_fair);
}

TEST(FairGrantTest, AHeadGivingUpAsItIsGrantedNeverLeavesTheLockHeldByNobody) {
  RedisServer server;
  redisync::Client holder(grant_config(server, 5000ms)), waiter(grant_config(server, 5000ms));
  const auto name = unique_name("fair-grant:");
  auto held = holder.fair_lock(name);
  int got_count = 0, gave_up = 0;
  for (int round = 0; round < redisync::test::load_count(40); ++round) {
    held.lock();
    const auto wait = std::chrono::milliseconds(20 + round % 7);
    Waiter w;
    w.start(waiter, name, wait);
    wait_until([&] { return server.command({"HEXISTS", fair_registrations(name), w.field}).as_integer() == 1; },
               1s, 1ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(10 + (round * 3) % 15));
    held.unlock();
    ASSERT_EQ(w.done.wait_for(10s), std::future_status::ready);
    (w.done.get() ? got_count : gave_up)++;
    ASSERT_TRUE(wait_until([&] { return server.command({"EXISTS", name}).as_integer() == 0; },
                           1500ms))
        << "round " << round << ": the lock stayed held by "
        << server.command({"HGETALL", name}).debug_string();
    EXPECT_EQ(server.command({"LLEN", JavaLayoutClient::fair_queue(name)}).as_integer(), 0);
  }
  std::cout << "[ info ] granted " << got_count << ", gave up " << gave_up << "\n";
}

TEST(GrantTest, ClosingAClientRemovesTheRegistrationsOfItsPendingWaits) {
  close_mid_wait(
      [](redisync::Client& c, const std::string& n) { return c.lock(n); },
      [](RedisServer& s, const std::string& n, const std::string& f) {
        return !s.command({"ZSCORE", lock_registrations(n), f}).is_nil();
      },
      [](const std::string& n, const std::string&) { return JavaLayoutClient::lock_channel(n); });
}

// A process that drops its Client inside one of its handlers and returns from main at once:
// the close runs on a detached thread, and the process's exit waits for it, so the waits it
// had pending are still deregistered (and the Client's threads free OpenSSL's per-thread state
// before OpenSSL's exit handler: the sanitizer suites check that at the worker's exit).
void exiting_right_after_dropping_the_client_still_deregisters(bool tls) {
  RedisServer server({.tls = tls});
  redisync::Client holder(config_for(server));
  const auto held_name = unique_name("grant:exit-held:");
  auto held = holder.lock(held_name);
  held.lock();
  int out = -1;
  const pid_t pid = redisync::test::spawn_worker(
      {"drop-in-handler-and-exit", tls ? server.tls_url() : server.url(), held_name,
       unique_name("grant:exit-free:")},
      &out);
  EXPECT_NE(redisync::test::read_all(out).find("dropped"), std::string::npos);
  redisync::test::expect_clean_exit(pid, 30s);
  EXPECT_EQ(server.command({"ZCARD", lock_registrations(held_name)}).as_integer(), 0)
      << "the exited process's wait is still registered";
  held.unlock();
}

TEST(GrantTest, AProcessExitingRightAfterDroppingItsClientInAHandlerStillDeregisters) {
  exiting_right_after_dropping_the_client_still_deregisters(false);
}

TEST(GrantTest, AProcessExitingRightAfterDroppingItsTlsClientInAHandlerStillDeregisters) {
  exiting_right_after_dropping_the_client_still_deregisters(true);
}

TEST(FairGrantTest, ClosingAClientRemovesTheRegistrationOfItsWaitingHead) {
  // The closed client's waiter stays in Redisson's queue (its give-up cannot be sent any
  // more) but not among the registrations: the release wakes it on its own channel.
  close_mid_wait([](redisync::Client& c, const std::string& n) { return c.fair_lock(n); },
                 [](RedisServer& s, const std::string& n, const std::string& f) {
                   return s.command({"HEXISTS", fair_registrations(n), f}).as_integer() == 1;
                 },
                 [](const std::string& n, const std::string& f) {
                   return JavaLayoutClient::fair_channel(n, f);
                 });
}

// --- NonReentrantLock and NonReentrantFairLock (docs/wire-format.md §12, §18): their waiters
// register and are granted as Lock's and FairLock's are; a re-entry is still refused. ---

namespace {

// A holder that was granted the lock counts it as any other hold: asking again (waiting,
// trying, queueing or not) is a re-entry, refused without touching the hold.
void a_granted_holder_cannot_reenter(Kind kind) {
  RedisServer server;
  redisync::Client holder(grant_config(server, 60000ms)), waiter(grant_config(server, 60000ms));
  const auto name = unique_name("grant-nr:");
  auto held = lock_of(holder, kind, name);
  held.lock();
  long long pttl = 0;
  int refused = 0;
  std::string count;
  Waiter w{.kind = kind, .lease = 90000ms};
  w.start(waiter, name, 20s, [&] {
    pttl = server.command({"PTTL", name}).as_integer();
    auto again = lock_of(waiter, kind, name);  // the same owner: this thread
    for (int i = 0; i < 3; ++i) {
      try {
        switch (i) {
          case 0: again.lock(); break;
          case 1: (void)again.try_lock(); break;
          default: (void)again.try_lock_for(5s); break;
        }
      } catch (const redisync::ReentryError&) {
        ++refused;
      }
    }
    count = server.command({"HGET", name, w.field}).as_string();
  });
  ASSERT_TRUE(registered(server, kind, name, w.field));
  held.unlock();
  ASSERT_EQ(w.done.wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(w.done.get());
  EXPECT_GT(pttl, 0);
  EXPECT_LE(pttl, 60000);  // granted: the grant lease, not the waiter's own 90 s
  EXPECT_EQ(refused, 3);
  EXPECT_EQ(count, "1");
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);  // one unlock released it
}

// Two tasks sharing an owner id, the bug these kinds catch: while one waits for the lock, the
// other's acquire is a re-entry, refused at once. (Let wait, it would take the owner's field
// that a grant to the first puts in the hash for its own grant: both in the section.)
void a_second_acquire_of_a_waiting_owner_is_refused(Kind kind) {
  RedisServer server;
  redisync::Client holder(grant_config(server)), client(grant_config(server));
  const auto name = unique_name("grant-nr:");
  auto held = lock_of(holder, kind, name);
  held.lock();
  auto lock = lock_of(client, kind, name);
  const auto owner = redisync::Client::new_owner_id();
  auto first = lock.async_try_lock(owner, 20s, redisync::Duration{0}, asio::use_future);
  ASSERT_TRUE(registered(server, kind, name, lock.owner_field(owner)));
  EXPECT_THROW(lock.async_try_lock(owner, 5s, redisync::Duration{0}, asio::use_future).get(),
               redisync::ReentryError);
  EXPECT_THROW(lock.async_try_lock(owner, redisync::Duration{0}, redisync::Duration{0},
                                   asio::use_future)
                   .get(),
               redisync::ReentryError);
  held.unlock();
  ASSERT_EQ(first.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(first.get());
  EXPECT_EQ(server.command({"HGET", name, lock.owner_field(owner)}).as_string(), "1");
  lock.async_unlock(owner, asio::use_future).get();
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
}

// The same when both start at once on a free lock: one holds it (count 1), the other is a
// ReentryError, as in wake mode.
void two_acquires_of_one_owner_at_once(Kind kind) {
  RedisServer server;
  redisync::Client client(grant_config(server));
  const auto name = unique_name("grant-nr:");
  auto lock = lock_of(client, kind, name);
  const auto owner = redisync::Client::new_owner_id();
  auto first = lock.async_try_lock(owner, 5s, redisync::Duration{0}, asio::use_future);
  auto second = lock.async_try_lock(owner, 5s, redisync::Duration{0}, asio::use_future);
  int held = 0, refused = 0;
  for (auto* f : {&first, &second}) {
    try {
      held += f->get() ? 1 : 0;
    } catch (const redisync::ReentryError&) {
      ++refused;
    }
  }
  EXPECT_EQ(held, 1);
  EXPECT_EQ(refused, 1);
  EXPECT_EQ(server.command({"HGET", name, lock.owner_field(owner)}).as_string(), "1");
  lock.async_unlock(owner, asio::use_future).get();
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
}

}  // namespace

TEST(NonReentrantGrantTest, TwoAcquiresOfOneOwnerAtOnceHoldOnceAndRefuseOnce) {
  two_acquires_of_one_owner_at_once(Kind::non_reentrant);
}

TEST(NonReentrantFairGrantTest, TwoAcquiresOfOneOwnerAtOnceHoldOnceAndRefuseOnce) {
  two_acquires_of_one_owner_at_once(Kind::non_reentrant_fair);
}

TEST(NonReentrantGrantTest, AGrantedHolderStillCannotReenter) {
  a_granted_holder_cannot_reenter(Kind::non_reentrant);
}

TEST(NonReentrantFairGrantTest, AGrantedHolderStillCannotReenter) {
  a_granted_holder_cannot_reenter(Kind::non_reentrant_fair);
}

TEST(NonReentrantGrantTest, ASecondAcquireOfAWaitingOwnerIsAReentryError) {
  a_second_acquire_of_a_waiting_owner_is_refused(Kind::non_reentrant);
}

TEST(NonReentrantFairGrantTest, ASecondAcquireOfAWaitingOwnerIsAReentryError) {
  a_second_acquire_of_a_waiting_owner_is_refused(Kind::non_reentrant_fair);
}

TEST(NonReentrantGrantTest, AWaiterGivingUpAsItIsGrantedNeverLeavesTheLockHeldByNobody) {
  give_up_as_granted_rounds(
      lock_maker(Kind::non_reentrant), [](redisync::BasicLock& l, int) { l.lock(); },
      [](redisync::BasicLock& l, int) { l.unlock(); }, registration_check(Kind::non_reentrant));
}

TEST(NonReentrantFairGrantTest, AHeadGivingUpAsItIsGrantedNeverLeavesTheLockHeldByNobody) {
  give_up_as_granted_rounds(
      lock_maker(Kind::non_reentrant_fair), [](redisync::BasicLock& l, int) { l.lock(); },
      [](redisync::BasicLock& l, int) { l.unlock(); },
      registration_check(Kind::non_reentrant_fair));
}

TEST(NonReentrantGrantTest, TheReleasersShorterGrantLeaseBoundsTheGrantedHold) {
  redisync::test::grant::releasers_grant_lease_bounds_the_granted_hold(
      lock_maker(Kind::non_reentrant), [](redisync::BasicLock& l) { return l; },
      registration_check(Kind::non_reentrant));
}

TEST(NonReentrantFairGrantTest, TheReleasersShorterGrantLeaseBoundsTheGrantedHold) {
  redisync::test::grant::releasers_grant_lease_bounds_the_granted_hold(
      lock_maker(Kind::non_reentrant_fair), [](redisync::BasicLock& l) { return l; },
      registration_check(Kind::non_reentrant_fair));
}

TEST(NonReentrantGrantTest, AGrantedHoldLastsItsOwnLeaseNotTheLongerGrantLease) {
  granted_hold_lasts_its_own_lease(lock_maker(Kind::non_reentrant),
                                   registration_check(Kind::non_reentrant));
}

TEST(NonReentrantFairGrantTest, AGrantedHoldLastsItsOwnLeaseNotTheLongerGrantLease) {
  granted_hold_lasts_its_own_lease(lock_maker(Kind::non_reentrant_fair),
                                   registration_check(Kind::non_reentrant_fair));
}

TEST(NonReentrantGrantTest, ClosingAClientRemovesTheRegistrationsOfItsPendingWaits) {
  close_mid_wait(lock_maker(Kind::non_reentrant), registration_check(Kind::non_reentrant),
                 [](const std::string& n, const std::string&) {
                   return JavaLayoutClient::lock_channel(n);
                 });
}

TEST(NonReentrantFairGrantTest, ClosingAClientRemovesTheRegistrationOfItsWaitingHead) {
  close_mid_wait(lock_maker(Kind::non_reentrant_fair), registration_check(Kind::non_reentrant_fair),
                 [](const std::string& n, const std::string& f) {
                   return JavaLayoutClient::fair_channel(n, f);
                 });
}

TEST(GrantTest, WaitersAreGrantedInTheOrderTheyBeganToWait) {
  // A waits 20 s, B 10 s, C 5 s, each starting after the one before registered; A and B then
  // refresh their registrations (every third of the 300 ms grant lease) while C registers. By
  // deadline C would come first and A last, and each refresh would move a waiter back behind
  // the later ones; a patient waiter could be passed over for as long as shorter waits kept
  // coming. Grants go in the order the waits began: A, B, C.
  RedisServer server;
  redisync::Client holder(grant_config(server, 300ms));
  std::vector<std::unique_ptr<redisync::Client>> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(std::make_unique<redisync::Client>(grant_config(server, 300ms)));
  const auto name = unique_name("grant-order:");
  auto held = holder.lock(name);
  held.lock();
  std::mutex m;
  std::vector<int> order;
  const std::chrono::seconds waits[] = {20s, 10s, 5s};
  std::vector<std::future<bool>> done;
  for (int i = 0; i < 3; ++i) {
    std::string field;
    std::atomic<bool> known{false};
    done.push_back(std::async(std::launch::async, [&, i] {
      auto lock = clients[static_cast<std::size_t>(i)]->lock(name);
      field = field_of(*clients[static_cast<std::size_t>(i)]);
      known = true;
      const bool got = lock.try_lock_for(waits[i]);
      if (got) {
        {
          std::lock_guard g(m);
          order.push_back(i);
        }
        std::this_thread::sleep_for(20ms);
        lock.unlock();
      }
      return got;
    }));
    ASSERT_TRUE(wait_until([&] { return known.load(); }, 5s));
    ASSERT_TRUE(registered(server, name, field));
    std::this_thread::sleep_for(250ms);  // the registered ones refresh meanwhile
  }
  held.unlock();
  for (auto& d : done) {
    ASSERT_EQ(d.wait_for(20s), std::future_status::ready);
    EXPECT_TRUE(d.get());
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}
