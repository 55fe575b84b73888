// SPDX-License-Identifier: Apache-2.0
// redisync::FencedLock against a real redis-server: the fencing counter of §11 (every
// acquisition, re-entry included), tokens across processes, a stale holder refused by a
// token-checking resource, async forms.
#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "lock_kinds_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;
using namespace redisync::test::kinds;

TEST(FencedLockTest, EveryAcquisitionIncrementsTheToken) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  auto lock = a.fenced_lock(unique_name("fenced:"));
  const std::string counter = "redisson_lock_token:{" + lock.name() + "}";
  EXPECT_EQ(lock.token(), 0u);
  EXPECT_EQ(lock.lock_and_get_token(), 1u);
  EXPECT_EQ(lock.lock_and_get_token(), 2u);  // re-entry
  lock.lock();                               // the plain API counts too
  EXPECT_TRUE(lock.try_lock());
  EXPECT_EQ(lock.token(), 4u);
  EXPECT_EQ(server.command({"GET", counter}).as_string(), "4");
  EXPECT_EQ(lock.hold_count(), 4);
  // Someone else: no token while it is held, and the counter does not move.
  EXPECT_EQ(b.fenced_lock(lock.name()).try_lock_and_get_token_for(0ms), std::nullopt);
  EXPECT_EQ(b.fenced_lock(lock.name()).try_lock_and_get_token_for(100ms), std::nullopt);
  EXPECT_EQ(lock.token(), 4u);
  for (int i = 0; i < 4; ++i) lock.unlock();
  EXPECT_FALSE(lock.is_locked());
  EXPECT_EQ(lock.token(), 4u);  // releases keep the counter
  const auto t = b.fenced_lock(lock.name()).try_lock_and_get_token_for(1s, 5s);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(*t, 5u);
  EXPECT_GT(lock.remaining_lease(), 4s);
  EXPECT_TRUE(lock.force_unlock());
  EXPECT_EQ(lock.token(), 5u);
  EXPECT_THROW(lock.lock_and_get_token(0ms), redisync::InvalidArgument);
}

TEST(FencedLockTest, TokensStrictlyIncreaseAcrossEightProcesses) {
  RedisServer server;
  const auto name = unique_name("fenced:");
  std::vector<pid_t> pids;
  std::vector<int> outs;
  for (int p = 0; p < 8; ++p) {
    int out = -1;
    pids.push_back(spawn_worker({"fenced-tokens", server.url(), name, "100"}, &out));
    outs.push_back(out);
  }
  std::set<std::uint64_t> all;
  std::size_t total = 0;
  for (std::size_t p = 0; p < pids.size(); ++p) {
    std::istringstream lines(read_all(outs[p]));
    expect_clean_exit(pids[p]);
    std::uint64_t token = 0;
    std::uint64_t previous = 0;
    int count = 0;
    while (lines >> token) {
      EXPECT_GT(token, previous) << "process " << p << " saw tokens go backwards";
      previous = token;
      all.insert(token);
      ++count;
      ++total;
    }
    EXPECT_EQ(count, 100) << "process " << p;
  }
  EXPECT_EQ(total, 800u);
  EXPECT_EQ(all.size(), 800u) << "duplicate tokens";
  EXPECT_EQ(*all.begin(), 1u);
  EXPECT_EQ(*all.rbegin(), 800u);
  redisync::Client client(config_for(server));
  EXPECT_EQ(client.fenced_lock(name).token(), 800u);
}

TEST(FencedLockTest, ResourceRefusesAHolderThatOutlivedItsLease) {
  // The pattern of docs/fencing.md: the resource remembers the highest token it accepted
  // and refuses writes carrying a lower one (here: a Lua check on the server).
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const auto name = unique_name("fenced:");
  auto write = [&](std::uint64_t token, const std::string& value) {
    return server
               .command({"EVAL",
                         "local seen = tonumber(redis.call('get', KEYS[1]) or '0') "
                         "if tonumber(ARGV[1]) < seen then return 0 end "
                         "redis.call('set', KEYS[1], ARGV[1]) "
                         "redis.call('set', KEYS[2], ARGV[2]) return 1",
                         "2", "resource:token", "resource:value", std::to_string(token), value})
               .as_integer() == 1;
  };
  auto la = a.fenced_lock(name);
  const std::uint64_t old_token = la.lock_and_get_token(300ms);
  EXPECT_TRUE(write(old_token, "a1"));
  std::this_thread::sleep_for(500ms);  // a "pauses" past its lease; b takes over
  auto lb = b.fenced_lock(name);
  const auto new_token = lb.try_lock_and_get_token_for(5s);
  ASSERT_TRUE(new_token.has_value());
  EXPECT_GT(*new_token, old_token);
  EXPECT_TRUE(write(*new_token, "b1"));
  EXPECT_FALSE(write(old_token, "a2"));  // the stale holder is refused
  EXPECT_EQ(server.command({"GET", "resource:value"}).as_string(), "b1");
  EXPECT_THROW(la.unlock_checked(), redisync::LockLostError);
  lb.unlock();
}

TEST(FencedLockTest, AsyncFormsWithFutureAndCoroutine) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto lock = client.fenced_lock(unique_name("fenced:"));
  const auto owner = redisync::Client::new_owner_id();
  const auto other = redisync::Client::new_owner_id();
  EXPECT_EQ(lock.async_lock_and_get_token(owner, 0ms, asio::use_future).get(), 1u);
  EXPECT_TRUE(lock.is_held_by_thread(owner));
  EXPECT_EQ(lock.async_try_lock_and_get_token(other, 0ms, 0ms, asio::use_future).get(),
            std::nullopt);
  EXPECT_FALSE(lock.async_try_lock(other, 50ms, 0ms, asio::use_future).get());
  lock.async_unlock(owner, asio::use_future).get();

  asio::io_context io;
  std::optional<std::uint64_t> token;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await lock.async_lock(other, 5s, asio::use_awaitable);  // token 2
        token = co_await lock.async_try_lock_and_get_token(other, 0ms, 0ms,
                                                           asio::use_awaitable);  // re-entry
        co_await lock.async_unlock(other, asio::use_awaitable);
        co_await lock.async_unlock(other, asio::use_awaitable);
      },
      asio::detached);
  io.run();
  EXPECT_EQ(token, std::optional<std::uint64_t>(3));
  EXPECT_FALSE(lock.is_locked());
  EXPECT_THROW(lock.async_unlock(other, asio::use_future).get(), redisync::NotOwnerError);
}

TEST(FencedLockTest, ExclusionAcrossEightProcesses) {
  RedisServer server;
  expect_exclusion_across_processes(server, "fenced", 8, 50);
}
