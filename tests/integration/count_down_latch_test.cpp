// SPDX-License-Identifier: Apache-2.0
// redisync::CountDownLatch against a real redis-server: the Redisson layout (docs/wire-format.md §9,
// including the always-braced channel), waiters in several processes released by the last
// count_down, timed waits, try_set_count, remove, bad input, async forms.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>
#include <atomic>
#include <future>
#include <thread>

#include "redisync/redisync.h"
#include "support/expect_error.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/server_stats.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::expect_error;
using redisync::test::config_for;
using redisync::test::subscribers;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

std::string channel_of(const std::string& name) {
  return "redisson_countdownlatch__channel__{" + name + "}";
}

}  // namespace

TEST(CountDownLatchTest, FiveWaitersInThreeProcessesAreReleasedByTheLastCountDown) {
  RedisServer server;
  redisync::Client client(config_for(server)), waiter_client(config_for(server));
  const auto name = unique_name("latch:");
  auto latch = client.count_down_latch(name);
  ASSERT_TRUE(latch.try_set_count(3));

  // Two worker processes with two waiting threads each, and one waiter here.
  std::vector<pid_t> pids;
  for (int p = 0; p < 2; ++p) {
    pids.push_back(redisync::test::detail::spawn_process(
        {REDISYNC_TEST_WORKER, "latch-wait", server.url(), name, "2", "60000"}, -1));
  }
  auto local = std::async(std::launch::async,
                          [&] { return waiter_client.count_down_latch(name).wait_for(60s); });
  // One subscription per process (threads of a process share it).
  ASSERT_TRUE(wait_until([&] { return subscribers(server, channel_of(name)) == 3; }, 10s));

  latch.count_down();
  latch.count_down();
  EXPECT_EQ(latch.count(), 1);
  EXPECT_FALSE(latch.try_wait());
  EXPECT_EQ(local.wait_for(200ms), std::future_status::timeout);
  for (pid_t pid : pids) {
    int status = 0;
    EXPECT_FALSE(redisync::test::detail::try_reap(pid, &status)) << "a worker returned early";
  }

  latch.count_down();  // the last one: everybody goes
  ASSERT_EQ(local.wait_for(20s), std::future_status::ready);
  EXPECT_TRUE(local.get());
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_TRUE(redisync::test::detail::reap_within(pid, 20s, &status));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  EXPECT_EQ(latch.count(), 0);
  EXPECT_TRUE(latch.try_wait());
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);  // an open latch has no key
}

TEST(CountDownLatchTest, WaitForTimesOutAndLeavesTheCount) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto latch = client.count_down_latch(unique_name("latch:"));
  ASSERT_TRUE(latch.try_set_count(2));
  EXPECT_FALSE(latch.wait_for(200ms));
  EXPECT_FALSE(latch.wait_until(std::chrono::steady_clock::now() + 100ms));
  EXPECT_FALSE(latch.wait_for(0ms));
  EXPECT_EQ(latch.count(), 2);
  EXPECT_EQ(server.command({"GET", latch.name()}).as_string(), "2");
  // An open latch: waiting returns at once.
  auto open = client.count_down_latch(unique_name("latch:"));
  EXPECT_TRUE(open.wait_for(0ms));
  open.wait();
  EXPECT_TRUE(open.try_wait());
}

TEST(CountDownLatchTest, TrySetCountSucceedsOnlyWhileOpen) {
  RedisServer server;
  redisync::Client client(config_for(server));
  const auto name = unique_name("latch:");
  auto latch = client.count_down_latch(name);
  EXPECT_TRUE(latch.try_set_count(5));
  EXPECT_FALSE(latch.try_set_count(5));
  EXPECT_FALSE(latch.try_set_count(1));
  EXPECT_EQ(latch.count(), 5);
  EXPECT_EQ(server.command({"TYPE", name}).as_string(), "string");
  EXPECT_EQ(server.command({"GET", name}).as_string(), "5");
  latch.count_down(2);
  EXPECT_EQ(latch.count(), 3);
  latch.count_down(10);  // past zero: opens, the key goes
  EXPECT_EQ(latch.count(), 0);
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
  latch.count_down();  // counting down an open latch does nothing
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
  EXPECT_TRUE(latch.try_set_count(1));  // a new round once open
  EXPECT_EQ(latch.count(), 1);
}

TEST(CountDownLatchTest, CountDownByMoreThanOneOpensForWaiters) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const auto name = unique_name("latch:");
  ASSERT_TRUE(a.count_down_latch(name).try_set_count(3));
  auto waiter = std::async(std::launch::async, [&] { return b.count_down_latch(name).wait_for(30s); });
  ASSERT_TRUE(wait_until([&] { return subscribers(server, channel_of(name)) == 1; }, 5s));
  a.count_down_latch(name).count_down(1);
  a.count_down_latch(name).count_down(5);  // 2 -> -3: this call opened it and publishes "0"
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
}

TEST(CountDownLatchTest, RemoveOpensTheLatchForWaiters) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const auto name = unique_name("latch:");
  auto latch = a.count_down_latch(name);
  EXPECT_FALSE(latch.remove());
  ASSERT_TRUE(latch.try_set_count(4));
  auto waiter = std::async(std::launch::async, [&] { return b.count_down_latch(name).wait_for(30s); });
  ASSERT_TRUE(wait_until([&] { return subscribers(server, channel_of(name)) == 1; }, 5s));
  EXPECT_TRUE(latch.remove());
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
  EXPECT_EQ(latch.count(), 0);
}

TEST(CountDownLatchTest, ChannelAlwaysGetsBraces) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const std::string name = "{" + unique_name("tag") + "}:latch";
  ASSERT_TRUE(a.count_down_latch(name).try_set_count(1));
  auto waiter = std::async(std::launch::async, [&] { return b.count_down_latch(name).wait_for(30s); });
  // Braces are added around N even though N has its own: "...__{{tag}:latch}".
  ASSERT_TRUE(wait_until([&] { return subscribers(server, channel_of(name)) == 1; }, 5s));
  EXPECT_EQ(channel_of(name), "redisson_countdownlatch__channel__{" + name + "}");
  a.count_down_latch(name).count_down();
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
}

TEST(CountDownLatchTest, ManyLocalWaitersShareOneSubscription) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const auto name = unique_name("latch:");
  auto latch = b.count_down_latch(name);
  ASSERT_TRUE(a.count_down_latch(name).try_set_count(1));
  std::atomic<int> released{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      if (latch.wait_for(30s)) ++released;
    });
  }
  ASSERT_TRUE(wait_until([&] { return subscribers(server, channel_of(name)) == 1; }, 5s));
  std::this_thread::sleep_for(100ms);
  a.count_down_latch(name).count_down();
  for (auto& t : threads) t.join();
  EXPECT_EQ(released.load(), 6);
}

TEST(CountDownLatchTest, BadInputGetsClearErrors) {
  RedisServer server;
  redisync::Client client(config_for(server));
  const auto name = unique_name("latch:");
  auto latch = client.count_down_latch(name);
  using IA = redisync::InvalidArgument;
  expect_error<IA>([&] { latch.try_set_count(-1); }, {"count", name, "-1"});
  expect_error<IA>([&] { latch.try_set_count(0); }, {"count", ">= 1"});
  expect_error<IA>([&] { latch.count_down(-2); }, {"count_down", name, "-2"});
  expect_error<IA>([&] { client.count_down_latch(""); }, {"name"});
  latch.count_down(0);  // does nothing
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
  server.command({"SET", name, "abc"});
  expect_error<redisync::ServerError>([&] { latch.count(); }, {name, "abc"});
  expect_error<redisync::ServerError>([&] { latch.wait_for(1s); }, {name});
  server.command({"DEL", name});
  server.command({"HSET", name, "f", "v"});
  expect_error<redisync::ServerError>([&] { latch.count_down(); }, {name, "WRONGTYPE"});
}

TEST(CountDownLatchTest, AsyncWait) {
  // Declared first: the Clients (and their I/O threads) end before it does.
  asio::io_context io;
  RedisServer server;
  redisync::Client client(config_for(server)), other(config_for(server));
  const auto name = unique_name("latch:");
  auto latch = client.count_down_latch(name);
  ASSERT_TRUE(latch.try_set_count(2));
  EXPECT_FALSE(latch.async_wait_for(50ms, asio::use_future).get());
  auto pending = latch.async_wait(asio::use_future);
  other.count_down_latch(name).count_down(2);
  pending.get();

  ASSERT_TRUE(latch.try_set_count(1));
  bool opened = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        opened = co_await latch.async_wait_for(50ms, asio::use_awaitable);  // still closed
        latch.count_down();
        co_await latch.async_wait(asio::use_awaitable);
        opened = co_await latch.async_wait_for(0ms, asio::use_awaitable);
      },
      asio::detached);
  io.run();
  EXPECT_TRUE(opened);
}
