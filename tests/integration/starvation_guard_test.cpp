// SPDX-License-Identifier: Apache-2.0
// The Lock's starvation guard (Config::starvation_guard, src/lua/lock_acquire.lua): a waiter
// that has waited too long claims the next turn, other redisync clients leave a free lock to
// it, re-entry still works, and a claim left by a dead waiter only delays others until it
// expires. Behaviour only; the effect on wait times is measured by bench/run.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::config_for;
using redisync::test::unique_name;

namespace {

std::string guard_key(const std::string& name) { return "redisync_lock_guard:{" + name + "}"; }

// Leaves a claim on `name` as a waiter of another client would, expiring after `px_ms`.
void claim_for_another_waiter(RedisServer& server, const std::string& name, const char* px_ms) {
  server.command({"SET", guard_key(name), "someone-else:1", "PX", px_ms});
}

redisync::Config config_with_guard(const RedisServer& server, std::chrono::milliseconds guard) {
  auto cfg = config_for(server);
  cfg.starvation_guard = guard;
  return cfg;
}

}  // namespace

TEST(StarvationGuardTest, WaiterGetsTheLockFromATightLoop) {
  // One client locks and unlocks as fast as it can; a second client's waiter must still get
  // the lock (the loop is bounded by count, time and the waiter's success).
  RedisServer server;
  redisync::Client looper(config_with_guard(server, 20ms)), waiter(config_with_guard(server, 20ms));
  const auto name = unique_name("guard:");
  std::atomic<bool> waiter_done{false};
  std::atomic<int> loops{0};
  std::thread loop([&] {
    auto lock = looper.lock(name);
    const auto until = std::chrono::steady_clock::now() + 20s;
    while (!waiter_done && loops < 200000 && std::chrono::steady_clock::now() < until) {
      lock.lock(10s);
      lock.unlock();
      ++loops;
    }
  });
  std::this_thread::sleep_for(50ms);  // the loop is running
  auto lock = waiter.lock(name);
  const bool got = lock.try_lock_for(15s, 10s);
  waiter_done = true;
  bool held = false;
  std::string claim = "?";
  const std::string mine =
      waiter.id() + ":" + std::to_string(redisync::Client::current_thread_id());
  if (got) {
    held = lock.is_held_by_current_thread();
    const auto reply = server.command({"GET", guard_key(name)});
    claim = reply.is_nil() ? "" : reply.as_string();
    lock.unlock();  // before joining: the loop may be waiting for this very lock
  }
  loop.join();
  ASSERT_TRUE(got) << "waited out 15 s against " << loops << " loop sections";
  EXPECT_TRUE(held);
  // Taking the lock removed the waiter's claim (the loop may have made one of its own since).
  EXPECT_NE(claim, mine);
  EXPECT_NE(claim, "?");
}

TEST(StarvationGuardTest, ClaimOfAnotherWaiterHoldsBackAFreeLockUntilItExpires) {
  RedisServer server;
  redisync::Client client(config_with_guard(server, 20ms));
  const auto name = unique_name("guard:");
  // A claim by a waiter that is gone: the free lock is left to it until the claim expires.
  claim_for_another_waiter(server, name, "400");
  auto lock = client.lock(name);
  EXPECT_FALSE(lock.try_lock());
  EXPECT_TRUE(lock.try_lock_for(5s, 10s));  // after the claim's expiry
  EXPECT_TRUE(lock.is_held_by_current_thread());
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
  bool quitter_got = true;
  std::thread([&] { quitter_got = quitter.lock(name).try_lock_for(150ms); }).join();
  EXPECT_FALSE(quitter_got);
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
