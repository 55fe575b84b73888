// SPDX-License-Identifier: Apache-2.0
// redisync::RateLimiter's edges against a real redis-server: waits too long to add to a clock
// (a wait without limit, never an overflow that gives up at once), a release() waking the same
// Client's sleepers at once, a reply that timed out (the grant may have been taken: never
// "no permit"), and bad input (keys of the wrong type, permits above the rate, a limiter
// nobody configured), each refused naming the limiter before anything is written.
#include <gtest/gtest.h>

#include <asio/use_future.hpp>
#include <chrono>
#include <future>
#include <string>

#include "redisync/redisync.h"
#include "support/expect_error.h"
#include "support/java_layout.h"
#include "support/redis_server.h"
#include "support/server_stats.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::RateType;
using J = redisync::test::JavaLayoutClient;  // the Redisson layout of the keys
using redisync::test::expect_error;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;

// try_acquire_for(hours::max()) overflowed converting to milliseconds, and a wait of
// milliseconds::max() overflowed `now + wait`: both gave up at once. Such waits have no limit.
TEST(RateLimiterSafety, HugeWaitsWaitWithoutLimit) {
  RedisServer server;
  redisync::Client client(server.url());
  auto limiter = client.rate_limiter(unique_name("rl:"));
  ASSERT_TRUE(limiter.try_set_rate(RateType::overall, 1, 300ms));
  ASSERT_TRUE(limiter.try_acquire());
  // Each call below finds the limiter exhausted; the window's end frees the permit.
  EXPECT_TRUE(limiter.try_acquire_for(1, std::chrono::hours::max()));
  EXPECT_TRUE(limiter.try_acquire_for(1, std::chrono::milliseconds::max()));
  EXPECT_TRUE(limiter.try_acquire_for(1, std::chrono::duration<double>(1e300)));
  EXPECT_TRUE(limiter.async_try_acquire(1, redisync::Duration::max(), asio::use_future).get());
  EXPECT_TRUE(limiter.async_try_acquire(1, redisync::max_duration + 1ms, asio::use_future).get());
  EXPECT_FALSE(limiter.try_acquire());
}

// release() put permits back while the same Client's waiters slept out a window delay (here a
// minute): they stayed blocked though permits were free. Now the release wakes them.
TEST(RateLimiterSafety, ReleaseWakesTheSameClientsSleepersAtOnce) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  ASSERT_TRUE(limiter.try_set_rate(RateType::overall, 2, 60s));
  ASSERT_TRUE(limiter.try_acquire(2));
  const auto calls = redisync::test::evalsha_calls(server);
  auto blocked = std::async(std::launch::async, [&] { limiter.acquire(1); });
  auto timed = limiter.async_try_acquire(1, 90s, asio::use_future);
  // Both have been refused (and sleep the window's delay) before the release.
  ASSERT_TRUE(wait_until([&] { return redisync::test::evalsha_calls(server) >= calls + 2; }, 10s));
  EXPECT_EQ(limiter.available_permits(), 0);
  limiter.release(2);
  // Far less than the minute they would otherwise sleep.
  ASSERT_EQ(blocked.wait_for(20s), std::future_status::ready);
  ASSERT_EQ(timed.wait_for(20s), std::future_status::ready);
  blocked.get();
  EXPECT_TRUE(timed.get());
  EXPECT_EQ(limiter.available_permits(), 0);
}

// A reply that timed out may come from a script that granted the permit: the call must not
// answer "no permit". It throws TimeoutError saying the permit may have been taken.
TEST(RateLimiterSafety, TimedOutAcquireSaysThePermitMayHaveBeenTaken) {
  RedisServer server;
  redisync::Client client(redisync::test::fast_config(server.url()));
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  ASSERT_TRUE(limiter.try_set_rate(RateType::overall, 3, 60s));
  ASSERT_TRUE(limiter.try_acquire());  // the server has the script cached from now on
  server.pause();
  expect_error<redisync::TimeoutError>([&] { limiter.try_acquire_for(1, 100ms); },
                                       {name, "may have been taken"});
  server.resume();
  // The paused attempt ran once the server resumed: it did take a permit.
  EXPECT_TRUE(wait_until(
      [&] {
        return server.command({"ZCARD", J::rate_permits_key(name)}).as_integer() == 2;
      },
      10s));
}

TEST(RateLimiterSafety, WindowKeysOfTheWrongTypeAreServerErrorsAndChangeNothing) {
  RedisServer server;
  redisync::Client client(server.url());
  // The overall permits set holds a string.
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  ASSERT_TRUE(limiter.try_set_rate(RateType::overall, 3, 60s));
  server.command({"SET", J::rate_permits_key(name), "not a zset"});
  expect_error<redisync::ServerError>([&] { limiter.try_acquire(); }, {name, "WRONGTYPE"});
  expect_error<redisync::ServerError>([&] { limiter.available_permits(); }, {name, "WRONGTYPE"});
  EXPECT_EQ(server.command({"EXISTS", J::rate_value_key(name)}).as_integer(), 0);
  EXPECT_EQ(server.command({"GET", J::rate_permits_key(name)}).as_string(), "not a zset");

  // Per client: this Client's value key, then its permits set, of the wrong type.
  const auto per = unique_name("rl:");
  auto mine = client.rate_limiter(per);
  ASSERT_TRUE(mine.try_set_rate(RateType::per_client, 3, 60s));
  const auto value = J::rate_value_key(per) + ":" + client.id();
  const auto permits = J::rate_permits_key(per) + ":" + client.id();
  server.command({"RPUSH", value, "x"});
  expect_error<redisync::ServerError>([&] { mine.try_acquire(); }, {per, "WRONGTYPE"});
  expect_error<redisync::ServerError>([&] { mine.release(); }, {per, "WRONGTYPE"});
  EXPECT_EQ(server.command({"EXISTS", permits}).as_integer(), 0);
  server.command({"DEL", value});
  server.command({"HSET", permits, "f", "v"});
  expect_error<redisync::ServerError>([&] { mine.try_acquire(); }, {per, "WRONGTYPE"});
  EXPECT_EQ(server.command({"EXISTS", value}).as_integer(), 0);
  EXPECT_EQ(server.command({"TYPE", permits}).as_string(), "hash");
}

TEST(RateLimiterSafety, AsyncPermitsAboveTheRateAndAnUnconfiguredLimiterAreClearErrors) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  expect_error<redisync::NotConfiguredError>([&] { limiter.try_acquire(); },
                                             {name, "no rate set"});
  expect_error<redisync::NotConfiguredError>(
      [&] { limiter.async_try_acquire(1, 0ms, asio::use_future).get(); }, {name, "no rate set"});
  EXPECT_EQ(server.command({"DBSIZE"}).as_integer(), 0);

  ASSERT_TRUE(limiter.try_set_rate(RateType::overall, 3, 60s));
  expect_error<redisync::InvalidArgument>(
      [&] { limiter.async_try_acquire(4, 10s, asio::use_future).get(); },
      {"permits (4) exceed the rate (3)", name});
  expect_error<redisync::InvalidArgument>(
      [&] { limiter.async_try_acquire(4, 0ms, asio::use_future).get(); }, {"exceed the rate", name});
  EXPECT_EQ(
      server.command({"EXISTS", J::rate_value_key(name), J::rate_permits_key(name)}).as_integer(),
      0);
  EXPECT_EQ(limiter.available_permits(), 3);
}

// Issue 36 item 7: a Java release puts permits back into the value but leaves its grant in the
// window; when that grant leaves the window, Redisson's availablePermits adds its permits back
// once more, without step 3's cap: the stored value is then above the rate. redisync took the
// value as it was and granted twice the rate in one window. Whatever it reads is capped now.
TEST(RateLimiterSafety, AValueAboveTheRateWrittenByJavaGrantsNoMoreThanTheRate) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  constexpr std::int64_t rate = 3;
  ASSERT_TRUE(limiter.try_set_rate(RateType::overall, rate, 1500ms));
  J java(server);
  ASSERT_TRUE(java.rate_acquire(name, rate).is_nil());
  ASSERT_EQ(java.rate_release(name, rate).as_integer(), rate);
  // Once the grant left the window, Java's availablePermits stores rate + rate.
  ASSERT_TRUE(wait_until([&] { return java.rate_available(name).as_integer() > rate; }, 5s, 50ms));
  ASSERT_EQ(server.command({"GET", J::rate_value_key(name)}).as_string(), "6");

  EXPECT_LE(limiter.available_permits(), rate);
  // One window (1.5 s; a handful of calls take milliseconds): at most `rate` grants.
  int granted = 0;
  for (int i = 0; i < 2 * rate; ++i) granted += limiter.try_acquire() ? 1 : 0;
  EXPECT_EQ(granted, rate) << "granted in one window, with a rate of " << rate;
  EXPECT_EQ(limiter.available_permits(), 0);
}
