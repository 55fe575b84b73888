// SPDX-License-Identifier: Apache-2.0
// redisync::SpinLock against a real redis-server: Lock's layout without pub/sub (§10),
// backoff waiting, exclusion across threads and processes.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "lock_kinds_util.h"
#include "support/server_stats.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::command_calls;
using redisync::test::no_channels;
using redisync::test::unique_name;
using redisync::test::wait_until;
using namespace redisync::test::kinds;

TEST(SpinLockTest, ReentrantWithTheLockLayoutAndNoPubSub) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  auto lock = a.spin_lock(unique_name("spin:"));
  lock.lock();
  EXPECT_TRUE(lock.try_lock());
  const std::string field = a.id() + ":" + std::to_string(redisync::Client::current_thread_id());
  EXPECT_EQ(server.command({"HGET", lock.name(), field}).as_string(), "2");
  EXPECT_EQ(lock.hold_count(), 2);

  // A waiter polls; it never subscribes.
  auto waiter =
      std::async(std::launch::async, [&] { return b.spin_lock(lock.name()).try_lock_for(400ms); });
  for (int i = 0; i < 10; ++i) {
    EXPECT_TRUE(no_channels(server));
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_FALSE(waiter.get());

  const long long published = command_calls(server, "publish");
  lock.unlock();
  lock.unlock();
  EXPECT_FALSE(lock.is_locked());
  lock.lock(5s);
  EXPECT_TRUE(b.spin_lock(lock.name()).force_unlock());
  EXPECT_EQ(command_calls(server, "publish"), published);  // releases are silent
  EXPECT_THROW(lock.unlock_checked(), redisync::LockLostError);

  // The measurement does see a publishing release.
  auto plain = a.lock(lock.name());
  plain.lock();
  plain.unlock();
  EXPECT_EQ(command_calls(server, "publish"), published + 1);
}

TEST(SpinLockTest, WaiterGetsTheLockAfterRelease) {
  RedisServer server;
  redisync::Client holder(config_for(server)), waiter(config_for(server));
  const auto name = unique_name("spin:");
  auto lock = holder.spin_lock(name);
  lock.lock(60s);
  auto got = std::async(std::launch::async, [&] {
    auto l = waiter.spin_lock(name);
    const bool ok = l.try_lock_for(30s);
    if (ok) l.unlock();
    return ok;
  });
  std::this_thread::sleep_for(300ms);  // the waiter is backing off
  lock.unlock();
  ASSERT_EQ(got.wait_for(10s), std::future_status::ready);  // a backoff, not the 60 s lease
  EXPECT_TRUE(got.get());
}

TEST(SpinLockTest, ConstantBackoffAndExclusionAcrossThreads) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto lock = client.spin_lock(unique_name("spin:"), redisync::SpinLock::Backoff::constant(2ms));
  EXPECT_EQ(lock.backoff().kind, redisync::SpinBackoff::Kind::constant);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        std::unique_lock guard(lock);
        auto v = client.execute({"GET", "counter"});
        const long long n = v.is_nil() ? 0 : std::stoll(v.str);
        client.execute({"SET", "counter", std::to_string(n + 1)});
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(server.command({"GET", "counter"}).as_string(), "200");
  EXPECT_THROW(client.spin_lock("x", redisync::SpinLock::Backoff::constant(0ms)),
               redisync::InvalidArgument);
  EXPECT_THROW(client.spin_lock("x", redisync::SpinLock::Backoff::exponential(10ms, 5ms)),
               redisync::InvalidArgument);
}

TEST(SpinLockTest, ExclusionAcrossEightProcesses) {
  RedisServer server;
  expect_exclusion_across_processes(server, "spin", 8, 50);
}
