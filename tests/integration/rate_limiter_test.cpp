// SPDX-License-Identifier: Apache-2.0
// redisync::RateLimiter against a real redis-server: Redisson's layout (docs/wire-format.md §17), each
// call, each bad input, waiting by the script's delay, accuracy across processes and threads
// (grants counted by their server-time scores), and a "Java-layout" client (our own Lua, written
// from the spec's text, with the client's clock as Redisson uses) sharing one limit.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <asio/use_future.hpp>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <future>
#include <tuple>
#include <map>
#include <random>
#include <thread>

#include "redisync/redisync.h"
#include "support/expect_error.h"
#include "support/java_layout.h"
#include "support/redis_server.h"
#include "support/server_stats.h"
#include "support/test_util.h"
#include "support/worker.h"

using namespace std::chrono_literals;
using redisync::RateType;
using J = redisync::test::JavaLayoutClient;  // the Redisson layout of the keys
using redisync::test::RedisServer;
using redisync::test::expect_error;
using redisync::test::server_now_ms;
using redisync::test::unique_name;

namespace {

// One grant as stored in the permits set: id, permits, score.
struct Grant {
  std::string id;
  long long permits = 0;
  long long score = 0;
};

// Decodes a member: 1 byte id length, the id, a 4-byte little-endian permit count.
Grant decode_member(const std::string& member, long long score) {
  Grant g;
  const auto len = static_cast<unsigned char>(member.at(0));
  g.id = member.substr(1, len);
  const std::string tail = member.substr(1 + len);
  EXPECT_EQ(tail.size(), 4u);
  for (int i = 3; i >= 0; --i) g.permits = g.permits * 256 + static_cast<unsigned char>(tail.at(i));
  g.score = score;
  return g;
}

std::vector<Grant> grants(RedisServer& server, const std::string& key) {
  auto r = server.command({"ZRANGE", key, "0", "-1", "WITHSCORES"});
  std::vector<Grant> out;
  for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) {
    out.push_back(decode_member(r.elements[i].as_string(), std::stoll(r.elements[i + 1].as_string())));
  }
  return out;
}

// The largest sum of permits granted in any window [s, s + interval - 1] (ms): at most the rate
// if the limiter holds. (The script grants at `now` when the grants scored in
// (now - interval, now] leave room.)
long long max_in_window(std::vector<Grant> all, long long interval) {
  std::sort(all.begin(), all.end(), [](const Grant& a, const Grant& b) { return a.score < b.score; });
  long long best = 0;
  long long sum = 0;
  std::size_t lo = 0;
  for (std::size_t hi = 0; hi < all.size(); ++hi) {
    sum += all[hi].permits;
    while (all[lo].score <= all[hi].score - interval) sum -= all[lo++].permits;
    best = std::max(best, sum);
  }
  return best;
}

// --- A "Java-layout" client: docs/wire-format.md §17 steps as Redisson runs them (client clock), in our own
// Lua written from the spec text.
const char* kJavaAcquire = R"lua(
local rate = redis.call('hget', KEYS[1], 'rate')
local interval = redis.call('hget', KEYS[1], 'interval')
local kind = redis.call('hget', KEYS[1], 'type')
if rate == false or interval == false or kind == false then
  return redis.error_reply('RateLimiter is not initialized')
end
rate = tonumber(rate); interval = tonumber(interval)
local value_key, permits_key = KEYS[2], KEYS[4]
if kind == '1' then value_key, permits_key = KEYS[3], KEYS[5] end
local p = tonumber(ARGV[1]); local now = tonumber(ARGV[2])
if p > rate then return redis.error_reply('Requested permits amount could not exceed defined rate') end
local value = redis.call('get', value_key)
local member = struct.pack('Bc0I', string.len(ARGV[3]), ARGV[3], p)
if value == false then
  redis.call('set', value_key, rate)
  redis.call('zadd', permits_key, now, member)
  redis.call('decrby', value_key, p)
  return nil
end
local expired = redis.call('zrangebyscore', permits_key, 0, now - interval)
local back = 0
for _, v in ipairs(expired) do local _, n = struct.unpack('Bc0I', v); back = back + n end
if back > 0 then
  redis.call('zremrangebyscore', permits_key, 0, now - interval)
  value = tonumber(value) + back
  if value > rate then
    local used = 0
    for _, v in ipairs(redis.call('zrange', permits_key, 0, -1)) do
      local _, n = struct.unpack('Bc0I', v); used = used + n
    end
    value = rate - used
  end
  redis.call('set', value_key, value)
end
if tonumber(value) < p then
  local oldest = redis.call('zrange', permits_key, 0, 0, 'withscores')
  return 3 + interval - (now - tonumber(oldest[2]))
end
redis.call('zadd', permits_key, now, member)
redis.call('decrby', value_key, p)
return nil
)lua";

long long client_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string random_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id(16, '\0');
  for (auto& c : id) c = static_cast<char>(rng() & 0xff);
  return id;
}

redisync::test::Reply java_acquire(RedisServer& server, const std::string& name, long long p,
                                   const std::string& java_client = "java-client-id") {
  return server.command({"EVAL", kJavaAcquire, "5", name, J::rate_value_key(name),
                         J::rate_value_key(name) + ":" + java_client, J::rate_permits_key(name),
                         J::rate_permits_key(name) + ":" + java_client, std::to_string(p),
                         std::to_string(client_ms()), random_id()});
}

// Java's trySetRate (§17.2): HSETNX of the four fields.
long long java_try_set_rate(RedisServer& server, const std::string& name, long long rate,
                            long long interval) {
  return server
      .command({"EVAL",
                "redis.call('hsetnx', KEYS[1], 'rate', ARGV[1]);"
                "redis.call('hsetnx', KEYS[1], 'interval', ARGV[2]);"
                "redis.call('hsetnx', KEYS[1], 'keepAliveTime', '0');"
                "return redis.call('hsetnx', KEYS[1], 'type', ARGV[3]);",
                "1", name, std::to_string(rate), std::to_string(interval), "0"})
      .as_integer();
}

using redisync::test::spawn_worker;

}  // namespace

TEST(RateLimiterTest, SetRateWritesRedissonsHashAndConfigReadsIt) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  EXPECT_EQ(limiter.name(), name);
  EXPECT_FALSE(limiter.config().has_value());

  EXPECT_TRUE(limiter.try_set_rate(RateType::overall, 3, 1000ms));
  EXPECT_FALSE(limiter.try_set_rate(RateType::per_client, 9, 5000ms));  // the first one wins
  EXPECT_EQ(server.command({"TYPE", name}).as_string(), "hash");
  EXPECT_EQ(server.command({"HGET", name, "rate"}).as_string(), "3");
  EXPECT_EQ(server.command({"HGET", name, "interval"}).as_string(), "1000");
  EXPECT_EQ(server.command({"HGET", name, "type"}).as_string(), "0");
  EXPECT_EQ(server.command({"HGET", name, "keepAliveTime"}).as_string(), "0");
  EXPECT_EQ(server.command({"PTTL", name}).as_integer(), -1);

  auto cfg = limiter.config();
  ASSERT_TRUE(cfg.has_value());
  EXPECT_EQ(cfg->type, RateType::overall);
  EXPECT_EQ(cfg->rate, 3);
  EXPECT_EQ(cfg->interval, 1000ms);
  EXPECT_EQ(cfg->keep_alive, 0ms);

  limiter.set_rate(RateType::per_client, 7, 2500ms, 60000ms);
  cfg = limiter.config();
  ASSERT_TRUE(cfg.has_value());
  EXPECT_EQ(cfg->type, RateType::per_client);
  EXPECT_EQ(cfg->rate, 7);
  EXPECT_EQ(cfg->interval, 2500ms);
  EXPECT_EQ(cfg->keep_alive, 60000ms);
  EXPECT_GT(server.command({"PTTL", name}).as_integer(), 0);
}

TEST(RateLimiterTest, AcquireRecordsGrantsInTheLayoutAndReleaseGivesBack) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  ASSERT_TRUE(limiter.try_set_rate(RateType::overall, 3, 60000ms));
  EXPECT_EQ(limiter.available_permits(), 3);
  EXPECT_EQ(server.command({"EXISTS", J::rate_value_key(name)}).as_integer(), 0);  // a read writes nothing

  const long long before = server_now_ms(server);
  EXPECT_TRUE(limiter.try_acquire(2));
  const long long after = server_now_ms(server);
  EXPECT_EQ(server.command({"GET", J::rate_value_key(name)}).as_string(), "1");
  auto g = grants(server, J::rate_permits_key(name));
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].id.size(), 16u);
  EXPECT_EQ(g[0].permits, 2);
  EXPECT_GE(g[0].score, before);  // scored with the server's clock
  EXPECT_LE(g[0].score, after);

  EXPECT_EQ(limiter.available_permits(), 1);
  EXPECT_FALSE(limiter.try_acquire(2));
  EXPECT_EQ(server.command({"ZCARD", J::rate_permits_key(name)}).as_integer(), 1);  // refusals add nothing
  EXPECT_TRUE(limiter.try_acquire());
  EXPECT_FALSE(limiter.try_acquire());
  EXPECT_FALSE(limiter.try_acquire_for(1, 50ms));  // frees in a minute: no point waiting
  limiter.release(2);
  EXPECT_EQ(limiter.available_permits(), 2);
  limiter.release(5);  // never above the rate
  EXPECT_EQ(limiter.available_permits(), 3);
  limiter.acquire(3);
  EXPECT_EQ(limiter.available_permits(), 0);

  EXPECT_TRUE(limiter.remove());
  EXPECT_EQ(server.command({"EXISTS", name, J::rate_value_key(name), J::rate_permits_key(name)}).as_integer(), 0);
  EXPECT_FALSE(limiter.remove());
  EXPECT_FALSE(limiter.config().has_value());
}

TEST(RateLimiterTest, PerClientWindowsAreSeparateAndSetRateRestartsOnlyOurs) {
  RedisServer server;
  redisync::Client a(server.url());
  redisync::Client b(server.url());
  const auto name = unique_name("rl:");
  auto la = a.rate_limiter(name);
  auto lb = b.rate_limiter(name);
  ASSERT_TRUE(la.try_set_rate(RateType::per_client, 2, 60000ms));
  EXPECT_TRUE(la.try_acquire(2));
  EXPECT_FALSE(la.try_acquire());
  EXPECT_TRUE(lb.try_acquire(2));  // b has a window of its own
  EXPECT_FALSE(lb.try_acquire());
  EXPECT_EQ(server.command({"GET", J::rate_value_key(name) + ":" + a.id()}).as_string(), "0");
  EXPECT_EQ(server.command({"ZCARD", J::rate_permits_key(name) + ":" + b.id()}).as_integer(), 1);
  EXPECT_EQ(server.command({"EXISTS", J::rate_value_key(name)}).as_integer(), 0);

  la.set_rate(RateType::per_client, 2, 60000ms);  // restarts a's window only
  EXPECT_EQ(server.command({"EXISTS", J::rate_value_key(name) + ":" + a.id()}).as_integer(), 0);
  EXPECT_EQ(la.available_permits(), 2);
  EXPECT_EQ(lb.available_permits(), 0);
}

TEST(RateLimiterTest, KeepAliveExpiresTheLimiterAndEveryUseExtendsIt) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  ASSERT_TRUE(limiter.try_set_rate(RateType::overall, 5, 1000ms, 300ms));
  const auto ttl = server.command({"PTTL", name}).as_integer();
  EXPECT_GT(ttl, 0);
  EXPECT_LE(ttl, 300);
  EXPECT_TRUE(limiter.try_acquire());
  for (const auto& key : {name, J::rate_value_key(name), J::rate_permits_key(name)}) {
    const auto t = server.command({"PTTL", key}).as_integer();
    EXPECT_GT(t, 0) << key;
    EXPECT_LE(t, 300) << key;
  }
  EXPECT_TRUE(redisync::test::wait_until(
      [&] { return server.command({"EXISTS", name}).as_integer() == 0; }, 5s));
  expect_error<redisync::NotConfiguredError>([&] { limiter.try_acquire(); }, {name, "no rate set"});
}

TEST(RateLimiterTest, WithoutKeepAliveTheWindowKeysCopyTheHashTtl) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  ASSERT_TRUE(limiter.try_set_rate(RateType::overall, 5, 1000ms));
  server.command({"PEXPIRE", name, "50000"});
  EXPECT_TRUE(limiter.try_acquire());
  EXPECT_GT(server.command({"PTTL", J::rate_value_key(name)}).as_integer(), 0);
  EXPECT_GT(server.command({"PTTL", J::rate_permits_key(name)}).as_integer(), 0);
}

TEST(RateLimiterTest, BadConfigurationIsRefusedBeforeAnyWrite) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  const auto max = redisync::RateLimiter::kMaxDuration;
  const auto cases = std::vector<std::tuple<std::int64_t, redisync::Duration, redisync::Duration,
                                            std::string>>{
      {0, 1000ms, 0ms, "rate"},
      {-3, 1000ms, 0ms, "rate"},
      {redisync::RateLimiter::kMaxRate + 1, 1000ms, 0ms, "rate"},
      {5, 0ms, 0ms, "interval"},
      {5, -10ms, 0ms, "interval"},
      {5, max + 1ms, 0ms, "interval"},
      {5, 1000ms, -1ms, "keep-alive"},
      {5, 1000ms, max + 1ms, "keep-alive"},
  };
  for (const auto& [rate, interval, keep, field] : cases) {
    expect_error<redisync::InvalidArgument>(
        [&] { limiter.try_set_rate(RateType::overall, rate, interval, keep); }, {field, name});
    expect_error<redisync::InvalidArgument>(
        [&] { limiter.set_rate(RateType::overall, rate, interval, keep); }, {field, name});
  }
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
  // The largest values are accepted and stored as they are.
  EXPECT_TRUE(limiter.try_set_rate(RateType::overall, redisync::RateLimiter::kMaxRate, max, max));
  EXPECT_TRUE(limiter.try_acquire(redisync::RateLimiter::kMaxRate));
  EXPECT_FALSE(limiter.try_acquire(1));
  EXPECT_EQ(limiter.config()->interval, max);
  EXPECT_THROW(redisync::Client(server.url()).rate_limiter(""), redisync::InvalidArgument);
}

TEST(RateLimiterTest, BadPermitsAreRefusedBeforeAnyWrite) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  ASSERT_TRUE(limiter.try_set_rate(RateType::overall, 3, 1000ms));
  for (std::int64_t p : {std::int64_t{0}, std::int64_t{-1}, redisync::RateLimiter::kMaxRate + 1}) {
    expect_error<redisync::InvalidArgument>([&] { limiter.try_acquire(p); }, {"permits", name});
    expect_error<redisync::InvalidArgument>([&] { limiter.acquire(p); }, {"permits", name});
    expect_error<redisync::InvalidArgument>([&] { limiter.try_acquire_for(p, 1s); },
                                            {"permits", name});
    expect_error<redisync::InvalidArgument>([&] { limiter.release(p); }, {"permits", name});
    expect_error<redisync::InvalidArgument>(
        [&] { limiter.async_acquire(p, asio::use_future).get(); }, {"permits", name});
  }
  // More than the rate could never be granted: an error at once, even for a blocking acquire.
  expect_error<redisync::InvalidArgument>([&] { limiter.acquire(4); },
                                          {"permits (4) exceed the rate (3)", name});
  expect_error<redisync::InvalidArgument>([&] { limiter.try_acquire_for(4, 10s); },
                                          {"exceed the rate", name});
  EXPECT_EQ(server.command({"EXISTS", J::rate_value_key(name), J::rate_permits_key(name)}).as_integer(), 0);
}

TEST(RateLimiterTest, NeverConfiguredLimiterIsAClearErrorNamingIt) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  expect_error<redisync::NotConfiguredError>([&] { limiter.acquire(); }, {name, "no rate set"});
  expect_error<redisync::NotConfiguredError>([&] { limiter.try_acquire_for(1, 5s); }, {name});
  expect_error<redisync::NotConfiguredError>([&] { limiter.release(); }, {name});
  expect_error<redisync::NotConfiguredError>([&] { limiter.available_permits(); }, {name});
  expect_error<redisync::NotConfiguredError>(
      [&] { limiter.async_acquire(1, asio::use_future).get(); }, {name});
  EXPECT_EQ(server.command({"KEYS", "*"}).elements.size(), 0u);
}

TEST(RateLimiterTest, WrongTypeKeysAreServerErrorsNamingTheLimiterAndChangeNothing) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  server.command({"SET", name, "not a hash"});
  expect_error<redisync::ServerError>([&] { limiter.try_set_rate(RateType::overall, 3, 1000ms); },
                                      {name, "WRONGTYPE"});
  expect_error<redisync::ServerError>([&] { limiter.set_rate(RateType::overall, 3, 1000ms); },
                                      {name, "WRONGTYPE"});
  expect_error<redisync::ServerError>([&] { limiter.try_acquire(); }, {name, "WRONGTYPE"});
  expect_error<redisync::ServerError>([&] { limiter.config(); }, {name, "WRONGTYPE"});
  EXPECT_EQ(server.command({"GET", name}).as_string(), "not a hash");

  // A window key of the wrong type: the attempt fails before it wrote anything.
  const auto other = unique_name("rl:");
  auto l2 = client.rate_limiter(other);
  ASSERT_TRUE(l2.try_set_rate(RateType::overall, 3, 1000ms));
  ASSERT_TRUE(l2.try_acquire());
  server.command({"DEL", J::rate_value_key(other)});
  server.command({"RPUSH", J::rate_value_key(other), "x"});
  expect_error<redisync::ServerError>([&] { l2.try_acquire(); }, {other, "WRONGTYPE"});
  expect_error<redisync::ServerError>([&] { l2.release(); }, {other, "WRONGTYPE"});
  EXPECT_EQ(server.command({"ZCARD", J::rate_permits_key(other)}).as_integer(), 1);
  server.command({"HSET", other, "rate", "many"});
  expect_error<redisync::ServerError>([&] { l2.available_permits(); }, {other, "not a valid number"});
}

TEST(RateLimiterTest, BlockedAcquireSleepsUntilTheOldestGrantLeavesTheWindow) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  ASSERT_TRUE(limiter.try_set_rate(RateType::overall, 2, 400ms));
  ASSERT_TRUE(limiter.try_acquire(2));
  const long long first = grants(server, J::rate_permits_key(name)).at(0).score;
  limiter.acquire(1);  // blocks until the grant above leaves the window
  auto g = grants(server, J::rate_permits_key(name));
  ASSERT_EQ(g.size(), 1u);  // the old grant is gone, the new one is in
  EXPECT_GE(g[0].score, first + 400);
  EXPECT_TRUE(limiter.try_acquire_for(1, 5s));
  EXPECT_EQ(limiter.available_permits(), 0);
}

TEST(RateLimiterTest, WaitersAreNotBlockedWhilePermitsAreFree) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  ASSERT_TRUE(limiter.try_set_rate(RateType::overall, 4, 600ms));
  ASSERT_TRUE(limiter.try_acquire(4));
  const long long start = grants(server, J::rate_permits_key(name)).at(0).score;
  // Four waiters: all four permits come back together after one interval, and each waiter
  // must get one then, not a window later.
  std::vector<std::future<bool>> waiters;
  for (int i = 0; i < 4; ++i) {
    waiters.push_back(std::async(std::launch::async, [&] { return limiter.try_acquire_for(1, 5s); }));
  }
  for (auto& w : waiters) EXPECT_TRUE(w.get());
  for (const auto& g : grants(server, J::rate_permits_key(name))) {
    EXPECT_GE(g.score, start + 600);
    EXPECT_LT(g.score, start + 2 * 600);  // in the very next window
  }
  // Free permits are granted at once by a zero-wait attempt as well.
  const auto other = unique_name("rl:");
  auto l2 = client.rate_limiter(other);
  ASSERT_TRUE(l2.try_set_rate(RateType::overall, 5, 60000ms));
  ASSERT_TRUE(l2.try_acquire(3));
  EXPECT_TRUE(l2.try_acquire(2));
}

TEST(RateLimiterTest, AsyncForms) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  ASSERT_TRUE(limiter.try_set_rate(RateType::overall, 3, 60000ms));
  EXPECT_TRUE(limiter.async_try_acquire(2, 0ms, asio::use_future).get());
  EXPECT_EQ(limiter.async_available_permits(asio::use_future).get(), 1);
  limiter.async_acquire(1, asio::use_future).get();
  EXPECT_FALSE(limiter.async_try_acquire(1, 20ms, asio::use_future).get());
  limiter.async_release(2, asio::use_future).get();
  EXPECT_EQ(limiter.async_available_permits(asio::use_future).get(), 2);
  std::promise<bool> got;
  limiter.async_try_acquire(1, 0ms, [&](std::exception_ptr e, bool ok) {
    got.set_value(!e && ok);
  });
  EXPECT_TRUE(got.get_future().get());
}

// Several processes x threads hammer one limiter over many windows. Every grant stays in the
// permits set for at least one interval, so sampling the set more often than that sees every
// grant with its server-time score; the samples must account for every grant the workers
// report, and no window may hold more than the rate.
TEST(RateLimiterTest, ProcessesAndThreadsNeverExceedTheRateInAnyWindow) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  constexpr long long kRate = 5;
  constexpr long long kInterval = 200;
  ASSERT_TRUE(client.rate_limiter(name).try_set_rate(RateType::overall, kRate, std::chrono::milliseconds(kInterval)));

  constexpr int kProcesses = 4;
  std::vector<pid_t> pids;
  std::vector<std::string> outputs;
  std::vector<int> fds;
  for (int i = 0; i < kProcesses; ++i) {
    outputs.push_back(redisync::test::temp_file("rate-hammer.out"));
    const int fd = ::open(outputs.back().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
    pids.push_back(spawn_worker({"rate-hammer", server.url(), name, "2", "3000"}, fd));
  }
  std::map<std::string, Grant> seen;
  auto sample = [&] {
    for (auto& g : grants(server, J::rate_permits_key(name))) seen.emplace(g.id, g);
  };
  const auto until = std::chrono::steady_clock::now() + 20s;
  int exited = 0;
  std::vector<bool> done(kProcesses, false);
  std::vector<int> status(kProcesses, -1);
  while (exited < kProcesses && std::chrono::steady_clock::now() < until) {
    sample();
    for (int i = 0; i < kProcesses; ++i) {
      if (!done[i] && redisync::test::detail::try_reap(pids[i], &status[i])) {
        done[i] = true;
        ++exited;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kInterval / 5));
  }
  sample();
  for (int fd : fds) ::close(fd);
  ASSERT_EQ(exited, kProcesses) << "workers did not finish in time";
  long long reported = 0;
  for (int i = 0; i < kProcesses; ++i) {
    EXPECT_TRUE(WIFEXITED(status[i]) && WEXITSTATUS(status[i]) == 0);
    std::ifstream in(outputs[i]);
    std::string word;
    long long n = 0;
    while (in >> word) {
      if (word == "granted") in >> n;
    }
    reported += n;
  }
  std::vector<Grant> all;
  for (auto& [id, g] : seen) all.push_back(g);
  EXPECT_EQ(static_cast<long long>(all.size()), reported) << "a grant escaped the samples";
  EXPECT_GE(reported, kRate * 10);  // ~15 windows: the limiter granted, many times
  EXPECT_LE(max_in_window(all, kInterval), kRate);
}

// A Java-layout client (§17 steps with the client's clock) and redisync draw on one limit.
TEST(RateLimiterTest, JavaLayoutClientAndRedisyncShareOneLimit) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  // Java configures it; we read its configuration.
  ASSERT_EQ(java_try_set_rate(server, name, 4, 60000), 1);
  EXPECT_FALSE(limiter.try_set_rate(RateType::overall, 10, 1000ms));
  ASSERT_TRUE(limiter.config().has_value());
  EXPECT_EQ(limiter.config()->rate, 4);

  EXPECT_TRUE(java_acquire(server, name, 2).is_nil());  // Java takes 2 (creates the window)
  EXPECT_EQ(limiter.available_permits(), 2);
  EXPECT_TRUE(limiter.try_acquire(1));
  EXPECT_TRUE(java_acquire(server, name, 1).is_nil());
  EXPECT_FALSE(limiter.try_acquire(1));                  // 4 granted between us
  auto refused = java_acquire(server, name, 1);          // Java is refused too: a delay
  ASSERT_EQ(refused.kind, redisync::test::Reply::Kind::integer);
  EXPECT_GT(refused.integer, 0);
  EXPECT_LE(refused.integer, 60003);
  EXPECT_EQ(grants(server, J::rate_permits_key(name)).size(), 3u);
  // Java decodes our members: its release accounting adds our permits back.
  for (const auto& g : grants(server, J::rate_permits_key(name))) EXPECT_EQ(g.id.size(), 16u);

  // Java's error for too many permits is ours too.
  const auto big = java_acquire(server, name, 5);
  EXPECT_TRUE(big.is_error());
  expect_error<redisync::InvalidArgument>([&] { limiter.try_acquire(5); }, {"exceed the rate"});
}

TEST(RateLimiterTest, JavaLayoutGrantsLeaveTheWindowForUsAndOursForJava) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("rl:");
  auto limiter = client.rate_limiter(name);
  ASSERT_EQ(java_try_set_rate(server, name, 2, 300), 1);
  ASSERT_TRUE(java_acquire(server, name, 2).is_nil());
  EXPECT_FALSE(limiter.try_acquire());
  limiter.acquire();  // sleeps until Java's grant leaves the window
  EXPECT_EQ(limiter.available_permits(), 1);
  EXPECT_TRUE(java_acquire(server, name, 1).is_nil());
  auto refused = java_acquire(server, name, 1);
  ASSERT_EQ(refused.kind, redisync::test::Reply::Kind::integer);
  ASSERT_TRUE(redisync::test::wait_until([&] { return java_acquire(server, name, 1).is_nil(); },
                                         5s, 50ms));
  // Both sides together, concurrently, for several windows: the total stays within the rate
  // per window (counted loosely: Java's scores come from its own clock).
  std::atomic<long long> ours{0};
  std::atomic<long long> theirs{0};
  const auto end = std::chrono::steady_clock::now() + 1500ms;
  const long long t0 = server_now_ms(server);
  std::thread java([&] {
    while (std::chrono::steady_clock::now() < end) {
      if (java_acquire(server, name, 1).is_nil()) ++theirs;
      std::this_thread::sleep_for(5ms);
    }
  });
  while (std::chrono::steady_clock::now() < end) {
    if (limiter.try_acquire_for(1, 100ms)) ++ours;
  }
  java.join();
  const long long elapsed = server_now_ms(server) - t0;
  // Who takes each freed permit is a race (our waiter sleeps until the exact release time,
  // the Java-layout side polls every 5 ms), so neither side is promised a share; the sum is.
  EXPECT_GT(ours.load() + theirs.load(), 0);
  // Windows of 300 ms in `elapsed`, plus the one in progress at the start.
  EXPECT_LE(ours + theirs, 2 * (elapsed / 300 + 2));
}
