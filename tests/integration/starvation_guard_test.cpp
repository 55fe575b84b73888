// SPDX-License-Identifier: Apache-2.0
// The starvation guard (Config::starvation_guard) of Lock and NonReentrantLock
// (src/lua/lock_acquire.lua), FencedLock (src/lua/fenced_lock_acquire.lua) and the write side
// of ReadWriteLock (src/lua/rwlock_write_acquire.lua): a waiter that has waited
// too long claims the next turn, other redisync clients leave a free lock to it, re-entry
// still works, and a claim left by a dead waiter only delays others until it expires.
// Behaviour only; the effect on wait times is measured by bench/run.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <optional>
#include <thread>
#include <vector>

#include "redisync/redisync.h"
#include "support/fault_proxy.h"
#include "support/java_layout.h"
#include "support/redis_server.h"
#include "support/server_stats.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::config_for;
using redisync::test::unique_name;

namespace {

std::string guard_key(const std::string& name) { return "redisync_lock_guard:{" + name + "}"; }
std::string write_guard_key(const std::string& name) {
  return "redisync_rwlock_guard:{" + name + "}";
}

// Leaves a claim on `name` as a waiter of another client would, expiring after `px_ms`.
void claim_for_another_waiter(RedisServer& server, const std::string& name, const char* px_ms) {
  server.command({"SET", guard_key(name), "someone-else:1", "PX", px_ms});
}

redisync::Config config_with_guard(const RedisServer& server, std::chrono::milliseconds guard) {
  auto cfg = config_for(server);
  cfg.starvation_guard = guard;
  return cfg;
}

// A claim by a waiter that is gone: `lock` (free, of a guarded kind) is left to it until the
// claim expires, then taken. `while_refused` checks what the refused attempt left.
template <class Lock, class Check>
void a_claim_holds_back_the_free_lock(RedisServer& server, Lock& lock, const std::string& name,
                                      Check while_refused) {
  claim_for_another_waiter(server, name, "400");
  EXPECT_FALSE(lock.try_lock());
  while_refused();
  EXPECT_TRUE(lock.try_lock_for(5s, 10s));  // after the claim's expiry
  EXPECT_TRUE(lock.is_held_by_current_thread());
}

}  // namespace

// One client locks and unlocks `name` as fast as it can (lock kind: `make_lock`), bounded by
// count, time and the waiter's success, while `wait` runs with a second client; `wait` must
// release what it took before it returns. Returns the loop's section count.
template <class MakeLock, class Wait>
int against_a_tight_loop(RedisServer& server, MakeLock make_lock, const std::string& name,
                         Wait wait) {
  redisync::Client looper(config_with_guard(server, 20ms)), waiter(config_with_guard(server, 20ms));
  std::atomic<bool> waiter_done{false};
  std::atomic<int> loops{0};
  std::thread loop([&] {
    auto lock = make_lock(looper, name);
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (!waiter_done && loops < 200000 && std::chrono::steady_clock::now() < until) {
      lock.lock(10s);
      lock.unlock();
      ++loops;
    }
  });
  std::this_thread::sleep_for(50ms);  // the loop is running
  wait(waiter);
  waiter_done = true;
  loop.join();
  return loops.load();
}

TEST(StarvationGuardTest, WaiterGetsTheLockFromATightLoop) {
  RedisServer server;
  const auto name = unique_name("guard:");
  bool got = false;
  bool held = false;
  std::string claim = "?";
  std::string mine;
  const int loops = against_a_tight_loop(
      server, [](redisync::Client& c, const std::string& n) { return c.lock(n); }, name,
      [&](redisync::Client& waiter) {
        auto lock = waiter.lock(name);
        got = lock.try_lock_for(15s, 10s);
        mine = waiter.id() + ":" + std::to_string(redisync::Client::current_thread_id());
        if (!got) return;
        held = lock.is_held_by_current_thread();
        const auto reply = server.command({"GET", guard_key(name)});
        claim = reply.is_nil() ? "" : reply.as_string();
        lock.unlock();  // the loop may be waiting for this very lock
      });
  ASSERT_TRUE(got) << "waited out 15 s against " << loops << " loop sections";
  EXPECT_TRUE(held);
  // Taking the lock removed the waiter's claim (the loop may have made one of its own since).
  EXPECT_NE(claim, mine);
  EXPECT_NE(claim, "?");
}

TEST(FencedLockStarvationGuardTest, WaiterGetsTheFencedLockFromATightLoop) {
  // As WaiterGetsTheLockFromATightLoop, for FencedLock (the same unfair acquire plus a token):
  // the chaos suite's slow-network case saw a fenced worker wait out its 4 s without a turn.
  RedisServer server;
  const auto name = unique_name("guard:");
  std::optional<std::uint64_t> token;
  bool held = false;
  std::uint64_t counter = 0;
  const int loops = against_a_tight_loop(
      server, [](redisync::Client& c, const std::string& n) { return c.fenced_lock(n); }, name,
      [&](redisync::Client& waiter) {
        auto lock = waiter.fenced_lock(name);
        token = lock.try_lock_and_get_token_for(15s, 10s);
        if (!token) return;
        held = lock.is_held_by_current_thread();
        counter = std::stoull(
            server.command({"GET", "redisson_lock_token:{" + name + "}"}).as_string());
        lock.unlock();  // the loop may be waiting for this very lock
      });
  ASSERT_TRUE(token) << "waited out 15 s against " << loops << " loop sections";
  EXPECT_TRUE(held);
  EXPECT_EQ(*token, counter) << "the waiter's token is the counter's value while it holds";
}

TEST(FencedLockStarvationGuardTest, ClaimOfAnotherWaiterHoldsBackAFreeFencedLockUntilItExpires) {
  RedisServer server;
  redisync::Client client(config_with_guard(server, 20ms));
  const auto name = unique_name("guard:");
  auto lock = client.fenced_lock(name);
  a_claim_holds_back_the_free_lock(server, lock, name, [&] {
    EXPECT_EQ(server.command({"EXISTS", "redisson_lock_token:{" + name + "}"}).as_integer(), 0)
        << "a refused attempt took a token";
  });
  lock.unlock();
}

TEST(FencedLockStarvationGuardTest, ReentryIsNotHeldBack) {
  RedisServer server;
  redisync::Client client(config_with_guard(server, 20ms));
  const auto name = unique_name("guard:");
  auto lock = client.fenced_lock(name);
  const auto first = lock.lock_and_get_token(10s);
  claim_for_another_waiter(server, name, "5000");
  const auto again = lock.try_lock_and_get_token_for(0ms, 10s);
  ASSERT_TRUE(again);
  EXPECT_GT(*again, first);
  lock.unlock();
  lock.unlock();
}

TEST(NonReentrantLockStarvationGuardTest, WaiterGetsTheNonReentrantLockFromATightLoop) {
  // As WaiterGetsTheLockFromATightLoop, for NonReentrantLock (Lock's unfair acquire with the
  // re-entry check in front), which had no guard.
  RedisServer server;
  const auto name = unique_name("guard:");
  bool got = false;
  bool held = false;
  const int loops = against_a_tight_loop(
      server, [](redisync::Client& c, const std::string& n) { return c.non_reentrant_lock(n); },
      name, [&](redisync::Client& waiter) {
        auto lock = waiter.non_reentrant_lock(name);
        got = lock.try_lock_for(15s, 10s);
        if (!got) return;
        held = lock.is_held_by_current_thread();
        lock.unlock();  // the loop may be waiting for this very lock
      });
  ASSERT_TRUE(got) << "waited out 15 s against " << loops << " loop sections";
  EXPECT_TRUE(held);
}

TEST(NonReentrantLockStarvationGuardTest, ClaimOfAnotherWaiterHoldsBackAFreeLockUntilItExpires) {
  RedisServer server;
  redisync::Client client(config_with_guard(server, 20ms));
  const auto name = unique_name("guard:");
  auto lock = client.non_reentrant_lock(name);
  a_claim_holds_back_the_free_lock(server, lock, name, [] {});
  // The claim of another waiter never turns a re-entry into a wait: it is refused as always.
  claim_for_another_waiter(server, name, "5000");
  EXPECT_THROW((void)lock.try_lock(), redisync::ReentryError);
  lock.unlock();
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
}

TEST(StarvationGuardTest, ClaimOfAnotherWaiterHoldsBackAFreeLockUntilItExpires) {
  RedisServer server;
  redisync::Client client(config_with_guard(server, 20ms));
  const auto name = unique_name("guard:");
  auto lock = client.lock(name);
  a_claim_holds_back_the_free_lock(server, lock, name, [] {});
  lock.unlock();
}

// A waiter that claimed the guard and then gave up (its wait ran out) drops its claim: the
// lock, once free, is not held back from the others for the rest of the claim's expiry
// (5 guard periods, at least 100 ms).
TEST(StarvationGuardTest, AWaiterThatGaveUpDropsItsClaim) {
  RedisServer server;
  redisync::Client holder(config_with_guard(server, 20ms)),
      quitter(config_with_guard(server, 20ms));
  const auto name = unique_name("guard:");
  auto lock = holder.lock(name);
  lock.lock();
  bool quitter_claimed = false;
  bool quitter_got = true;
  std::thread([&] {
    // A waiter claims at an attempt after the guard period; nothing releases here, so a
    // release's message wakes it once it has waited that long.
    std::thread watch([&] {
      std::this_thread::sleep_for(100ms);
      server.command({"PUBLISH", redisync::test::JavaLayoutClient::lock_channel(name), "0"});
      quitter_claimed = redisync::test::wait_until(
          [&] { return server.command({"EXISTS", guard_key(name)}).as_integer() == 1; }, 2s);
    });
    quitter_got = quitter.lock(name).try_lock_for(600ms);
    watch.join();
  }).join();
  EXPECT_FALSE(quitter_got);
  EXPECT_TRUE(quitter_claimed);  // it did claim the next turn while it waited
  EXPECT_TRUE(redisync::test::wait_until(
      [&] { return server.command({"EXISTS", guard_key(name)}).as_integer() == 0; }, 2s));
  lock.unlock();
  bool other_got = false;
  std::thread([&] {
    auto other = holder.lock(name);
    other_got = other.try_lock();
    if (other_got) other.unlock();
  }).join();
  EXPECT_TRUE(other_got);
}

// Attack (issue 34): a waiter whose attempt came after the guard period (here: a slow link, as
// in a burst of 20,000 acquires) claimed the next turn and then attempted every quarter guard
// period (12 ms here) for the rest of its wait, alone on its lock: 20,000 such waiters asked
// the server millions of times a second. A release message wakes the one local waiter of a
// channel, so one that nobody has outrun since needs no polling.
template <class MakeLock>
void lone_waiter_makes_no_attempts_while_the_lock_is_held(MakeLock make_lock,
                                                          const std::string& name,
                                                          const std::string& claim_key) {
  RedisServer server;
  redisync::test::FaultProxy proxy{server.port()};
  auto slow_cfg = redisync::Config::from_url(proxy.url());
  slow_cfg.starvation_guard = 50ms;  // claims last 250 ms
  redisync::Client holder(config_with_guard(server, 50ms)), waiter(slow_cfg);
  waiter.execute({"PING"});  // connected before the delay
  auto held = make_lock(holder, name);
  held.lock(30s);  // a fixed lease: no renewals among the calls counted
  // 40 ms each way: the attempt after the subscription goes out past the guard period.
  proxy.set_delay(redisync::test::Direction::both, 40ms);
  std::atomic<bool> got{true};
  std::thread t([&] {
    auto mine = make_lock(waiter, name);
    got = mine.try_lock_for(2s, 10s);
  });
  const bool claimed = redisync::test::wait_until(
      [&] { return server.command({"EXISTS", claim_key}).as_integer() == 1; }, 1500ms);
  std::this_thread::sleep_for(50ms);
  const long long before = redisync::test::evalsha_calls(server);
  std::this_thread::sleep_for(800ms);
  const long long during = redisync::test::evalsha_calls(server) - before;
  t.join();
  held.unlock();
  EXPECT_TRUE(claimed) << "the waiter never claimed: the check below would prove nothing";
  EXPECT_FALSE(got);
  // Polling every 12 ms makes about 60 calls in the window; an asleep waiter makes none.
  EXPECT_LE(during, 3) << "script calls while the lone waiter waited";
}

TEST(StarvationGuardTest, ALoneWaiterMakesNoAttemptsWhileTheLockIsHeld) {
  const auto name = unique_name("guard:");
  lone_waiter_makes_no_attempts_while_the_lock_is_held(
      [](redisync::Client& c, const std::string& lock_name) { return c.lock(lock_name); }, name,
      guard_key(name));
}

TEST(WriteLockStarvationGuardTest, ALoneWriterMakesNoAttemptsWhileTheLockIsHeld) {
  const auto name = unique_name("wguard:");
  lone_waiter_makes_no_attempts_while_the_lock_is_held(
      [](redisync::Client& c, const std::string& lock_name) {
        return c.read_write_lock(lock_name).write_lock();
      },
      name, write_guard_key(name));
}

// The other side of the same rule: a claimant that lost the lock to a competitor re-locking at
// once after each release (the waiter's link is 5 ms slower each way, so the competitor's
// attempt always comes first) keeps its claim fresh while the competitor holds the lock for
// longer than a claim lasts (250 ms sections, 100 ms claims), and so wins at a following
// release. Sleeping until the next message instead, its claim would have lapsed every time.
TEST(FencedLockStarvationGuardTest, ALoneWaiterMakesNoAttemptsWhileTheLockIsHeld) {
  const auto name = unique_name("guard:");
  lone_waiter_makes_no_attempts_while_the_lock_is_held(
      [](redisync::Client& c, const std::string& n) { return c.fenced_lock(n); }, name,
      guard_key(name));
}

TEST(StarvationGuardTest, AnOutrunWaiterKeepsItsClaimThroughLongSections) {
  RedisServer server;
  redisync::test::FaultProxy proxy{server.port()};
  auto slow_cfg = redisync::Config::from_url(proxy.url());
  slow_cfg.starvation_guard = 20ms;
  redisync::Client looper(config_with_guard(server, 20ms)), waiter(slow_cfg);
  waiter.execute({"PING"});  // connected before the delay
  proxy.set_delay(redisync::test::Direction::both, 5ms);
  const auto name = unique_name("guard:");
  std::atomic<bool> waiter_done{false};
  std::atomic<int> sections{0};
  std::thread loop([&] {
    auto lock = looper.lock(name);
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (!waiter_done && sections < 100 && std::chrono::steady_clock::now() < until) {
      if (!lock.try_lock_for(5s, 10s)) continue;
      std::this_thread::sleep_for(250ms);
      lock.unlock();
      ++sections;
    }
  });
  ASSERT_TRUE(redisync::test::wait_until([&] { return sections >= 1; }, 5s));
  auto lock = waiter.lock(name);
  const bool got = lock.try_lock_for(4s, 10s);
  waiter_done = true;
  if (got) lock.unlock();  // before joining: the loop may be waiting for this very lock
  loop.join();
  EXPECT_TRUE(got) << "outrun for 4 s by " << sections << " sections of 250 ms";
}

// Two waiters of one process on one lock, both past the guard period: a release message wakes
// one of them, maybe the one the other's claim turns away. Both get the lock after the release,
// neither is left asleep until the holder's lease end (30 s here).
TEST(StarvationGuardTest, AClaimantSharingItsLockWithALocalWaiterIsNotLeftAsleep) {
  RedisServer server;
  redisync::Client holder(config_with_guard(server, 20ms)),
      waiters(config_with_guard(server, 20ms));
  const auto name = unique_name("guard:");
  auto held = holder.lock(name);
  held.lock(30s);
  std::atomic<int> got{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&] {
      auto mine = waiters.lock(name);
      if (mine.try_lock_for(10s, 10s)) {
        ++got;
        mine.unlock();
      }
    });
  }
  std::this_thread::sleep_for(300ms);  // both past the guard period, one of them claiming
  held.unlock();
  for (auto& t : threads) t.join();
  EXPECT_EQ(got.load(), 2);
}

TEST(StarvationGuardTest, ReentryIsNotHeldBack) {
  RedisServer server;
  redisync::Client client(config_with_guard(server, 20ms));
  const auto name = unique_name("guard:");
  auto lock = client.lock(name);
  lock.lock(10s);
  claim_for_another_waiter(server, name, "10000");
  EXPECT_TRUE(lock.try_lock());  // re-entry by the holder
  EXPECT_EQ(lock.hold_count(), 2);
  lock.unlock();
  lock.unlock();
}

TEST(StarvationGuardTest, OffMeansNoGuardKeyIsRead) {
  RedisServer server;
  redisync::Client client(config_with_guard(server, 0ms));
  const auto name = unique_name("guard:");
  claim_for_another_waiter(server, name, "10000");
  auto lock = client.lock(name);
  EXPECT_TRUE(lock.try_lock());  // Redisson's behaviour: the key means nothing
  lock.unlock();
}

TEST(StarvationGuardTest, RedissonLayoutClientIgnoresTheGuard) {
  // A Redisson-layout acquire (docs/wire-format.md §2.2, no guard) takes a free lock despite a claim:
  // the guard only ever holds back redisync clients.
  RedisServer server;
  const auto name = unique_name("guard:");
  claim_for_another_waiter(server, name, "10000");
  const auto reply = server.command(
      {"EVAL",
       "if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) "
       "then redis.call('hincrby', KEYS[1], ARGV[2], 1) redis.call('pexpire', KEYS[1], ARGV[1]) "
       "return nil end return redis.call('pttl', KEYS[1])",
       "1", name, "10000", "java-client:1"});
  EXPECT_TRUE(reply.is_nil());
  EXPECT_EQ(server.command({"HGET", name, "java-client:1"}).as_string(), "1");
}

TEST(StarvationGuardTest, BadSettingIsAConfigError) {
  EXPECT_THROW(redisync::Config::from_url("redis://127.0.0.1:6379?starvation_guard=-5"),
               redisync::ConfigError);
  EXPECT_THROW(redisync::Config::from_url("redis://127.0.0.1:6379?busy_poll=2s"),
               redisync::ConfigError);
  EXPECT_THROW(redisync::Config::from_url("redis://127.0.0.1:6379?busy_poll=fast"),
               redisync::ConfigError);
  const auto cfg =
      redisync::Config::from_url("redis://127.0.0.1:6379?busy_poll=150us&starvation_guard=50ms");
  EXPECT_EQ(cfg.busy_poll.count(), 150);
  EXPECT_EQ(cfg.starvation_guard.count(), 50);
}

// --- The write side of ReadWriteLock (issue 38: a chaos worker starved of the write lock) ---

TEST(WriteLockStarvationGuardTest, WriterGetsTheWriteLockFromATightLoop) {
  // As WaiterGetsTheLockFromATightLoop, for the write lock: one client write-locks and unlocks
  // as fast as it can, a second client's writer must still get the write lock.
  RedisServer server;
  redisync::Client looper(config_with_guard(server, 20ms)), waiter(config_with_guard(server, 20ms));
  const auto name = unique_name("wguard:");
  std::atomic<bool> waiter_done{false};
  std::atomic<int> loops{0};
  std::thread loop([&] {
    auto lock = looper.read_write_lock(name).write_lock();
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (!waiter_done && loops < 200000 && std::chrono::steady_clock::now() < until) {
      lock.lock(10s);
      lock.unlock();
      ++loops;
    }
  });
  std::this_thread::sleep_for(50ms);  // the loop is running
  auto lock = waiter.read_write_lock(name).write_lock();
  const bool got = lock.try_lock_for(15s, 10s);
  waiter_done = true;
  bool held = false;
  std::string claim = "?";
  const std::string mine =
      waiter.id() + ":" + std::to_string(redisync::Client::current_thread_id()) + ":write";
  if (got) {
    held = lock.is_held_by_current_thread();
    const auto reply = server.command({"GET", write_guard_key(name)});
    claim = reply.is_nil() ? "" : reply.as_string();
    lock.unlock();  // before joining: the loop may be waiting for this very lock
  }
  loop.join();
  ASSERT_TRUE(got) << "waited out 15 s against " << loops << " loop sections";
  EXPECT_TRUE(held);
  EXPECT_NE(claim, mine);  // taking the lock removed the waiter's own claim
  EXPECT_NE(claim, "?");
}

// Attack: two clients pass the write lock back and forth, each holding it for 30 ms and asking
// again at once; a third writer's link is 5 ms slower each way. Every write release wakes all
// waiters, and the other fast client's attempt arrives first; the slow writer's arrives about
// 10 ms after the release, inside the next 30 ms section, every time. Without the guard it
// starves for its whole wait (issue 38: a chaos worker that never held the write lock); with
// it, the slow writer claims the next turn and the fast ones leave the free lock to it.
TEST(WriteLockStarvationGuardTest, WriterOnASlowerLinkGetsTheWriteLockFromTwoClientsPassingItOn) {
  RedisServer server;
  redisync::test::FaultProxy proxy{server.port()};
  auto slow_cfg = redisync::Config::from_url(proxy.url());
  slow_cfg.starvation_guard = 20ms;
  redisync::Client slow(slow_cfg);
  const auto name = unique_name("wguard:");
  auto lock = slow.read_write_lock(name).write_lock();
  ASSERT_TRUE(lock.try_lock());  // connected (and the script loaded) before the delay
  lock.unlock();
  proxy.set_delay(redisync::test::Direction::both, 5ms);
  std::atomic<bool> waiter_done{false};
  std::atomic<int> sections{0};
  std::vector<std::thread> passers;
  for (int i = 0; i < 2; ++i) {
    passers.emplace_back([&] {
      redisync::Client fast(config_with_guard(server, 20ms));
      auto mine = fast.read_write_lock(name).write_lock();
      const auto until = std::chrono::steady_clock::now() + 20s;
      while (!waiter_done && sections < 2000 && std::chrono::steady_clock::now() < until) {
        if (!mine.try_lock_for(10s, 10s)) continue;
        std::this_thread::sleep_for(30ms);
        mine.unlock();
        ++sections;
      }
    });
  }
  ASSERT_TRUE(redisync::test::wait_until([&] { return sections >= 4; }, 10s));  // both passing
  const bool got = lock.try_lock_for(3s, 10s);
  waiter_done = true;
  if (got) lock.unlock();  // before joining: a passer may be waiting for this very lock
  for (auto& t : passers) t.join();
  EXPECT_TRUE(got) << "the slower writer waited out 3 s against " << sections << " sections";
}

TEST(WriteLockStarvationGuardTest, ClaimOfAnotherWriterHoldsBackAFreeWriteLockUntilItExpires) {
  RedisServer server;
  redisync::Client client(config_with_guard(server, 20ms));
  const auto name = unique_name("wguard:");
  server.command({"SET", write_guard_key(name), "someone-else:1:write", "PX", "400"});
  auto lock = client.read_write_lock(name).write_lock();
  EXPECT_FALSE(lock.try_lock()) << "a free write lock was taken from under another's claim";
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);  // refused before any write
  EXPECT_TRUE(lock.try_lock_for(5s, 10s));                      // after the claim's expiry
  EXPECT_TRUE(lock.is_held_by_current_thread());
  lock.unlock();
}

TEST(WriteLockStarvationGuardTest, AWriterThatGaveUpDropsItsClaim) {
  RedisServer server;
  redisync::Client holder(config_with_guard(server, 20ms)),
      quitter(config_with_guard(server, 20ms));
  const auto name = unique_name("wguard:");
  auto lock = holder.read_write_lock(name).write_lock();
  lock.lock();
  bool quitter_claimed = false;
  bool quitter_got = true;
  std::thread([&] {
    auto mine = quitter.read_write_lock(name).write_lock();
    // A waiter claims at an attempt after the guard period; nothing releases here, so a
    // write release's message ("1") wakes it once it has waited that long.
    std::thread watch([&] {
      std::this_thread::sleep_for(100ms);
      server.command({"PUBLISH", redisync::test::JavaLayoutClient::rwlock_channel(name), "1"});
      quitter_claimed = redisync::test::wait_until(
          [&] { return server.command({"EXISTS", write_guard_key(name)}).as_integer() == 1; },
          2s);
    });
    quitter_got = mine.try_lock_for(600ms);
    watch.join();
  }).join();
  EXPECT_FALSE(quitter_got);
  EXPECT_TRUE(quitter_claimed);  // it did claim the next turn while it waited
  EXPECT_TRUE(redisync::test::wait_until(
      [&] { return server.command({"EXISTS", write_guard_key(name)}).as_integer() == 0; }, 2s));
  lock.unlock();
  bool other_got = false;
  std::thread([&] {
    auto other = holder.read_write_lock(name).write_lock();
    other_got = other.try_lock();
    if (other_got) other.unlock();
  }).join();
  EXPECT_TRUE(other_got);
}

TEST(WriteLockStarvationGuardTest, WriteReentryIsNotHeldBack) {
  RedisServer server;
  redisync::Client client(config_with_guard(server, 20ms));
  const auto name = unique_name("wguard:");
  auto lock = client.read_write_lock(name).write_lock();
  lock.lock(10s);
  server.command({"SET", write_guard_key(name), "someone-else:1:write", "PX", "10000"});
  EXPECT_TRUE(lock.try_lock());  // re-entry by the holder
  EXPECT_EQ(lock.hold_count(), 2);
  lock.unlock();
  lock.unlock();
}

TEST(WriteLockStarvationGuardTest, OffMeansNoGuardKeyIsRead) {
  RedisServer server;
  redisync::Client client(config_with_guard(server, 0ms));
  const auto name = unique_name("wguard:");
  server.command({"SET", write_guard_key(name), "someone-else:1:write", "PX", "10000"});
  auto lock = client.read_write_lock(name).write_lock();
  EXPECT_TRUE(lock.try_lock());  // Redisson's behaviour: the key means nothing
  lock.unlock();
}

// A Redisson-layout writer ignores the claim: it takes a free write lock despite it, and it is
// still excluded by our holder and woken by our release (the guard holds back redisync only).
TEST(WriteLockStarvationGuardTest, RedissonWriterIgnoresTheClaimIsExcludedAndWoken) {
  RedisServer server;
  redisync::test::JavaLayoutClient java(server);
  redisync::Client client(config_with_guard(server, 20ms));
  const auto name = unique_name("wguard:");
  constexpr long long kThread = 57;
  server.command({"SET", write_guard_key(name), "someone-else:1:write", "PX", "10000"});
  ASSERT_TRUE(java.write_acquire(name, 30000, kThread).is_nil()) << "Java was held back";
  auto ours = client.read_write_lock(name).write_lock();
  EXPECT_FALSE(ours.try_lock());  // Java holds it
  EXPECT_EQ(java.write_release(name, kThread, 30000).as_integer(), 1);
  server.command({"DEL", write_guard_key(name)});
  // Ours holds; Java is excluded, and our release wakes a Java waiter on the rwlock channel.
  ASSERT_TRUE(ours.try_lock());
  EXPECT_FALSE(java.write_acquire(name, 30000, kThread).is_nil());
  redisync::test::ChannelListener java_waiter(server,
                                              redisync::test::JavaLayoutClient::rwlock_channel(name));
  ours.unlock();
  EXPECT_EQ(java_waiter.next_message(5s), "1");
  EXPECT_TRUE(java.write_acquire(name, 30000, kThread).is_nil());
}
