// SPDX-License-Identifier: Apache-2.0
// redisync::PermitExpirableSemaphore against a real redis-server: the Redisson 4.x layout
// (docs/wire-format.md §8: raw 16-byte ids in "{N}:timeout", epoch-ms scores, the no-expiry constant),
// leases and reclaim, a SIGKILLed holder's permit coming back to a blocked acquirer, releases
// (one, several all-or-nothing), bad input, async forms.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>
#include <chrono>
#include <future>
#include <set>
#include <thread>

#include "redisync/redisync.h"
#include "support/expect_error.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/server_stats.h"
#include "support/test_util.h"
#include "sync/counters/permit_expirable_semaphore_ids.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::expect_error;
using redisync::test::config_for;
using redisync::test::evalsha_calls;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

using redisync::test::subscribed_to;

long long epoch_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string raw_id(const std::string& hex) { return redisync::sync::permit_id_from_hex(hex, "t"); }

bool is_hex_id(const std::string& id) {
  return id.size() == 32 &&
         id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

TEST(PermitExpirableSemaphoreTest, LayoutOfIdsScoresAndCounts) {
  RedisServer server;
  redisync::Client client(config_for(server));
  const auto name = unique_name("pes:");
  const std::string zset = "{" + name + "}:timeout";
  auto sem = client.permit_expirable_semaphore(name);
  EXPECT_EQ(sem.available_permits(), 0);
  EXPECT_FALSE(sem.try_acquire().has_value());
  ASSERT_TRUE(sem.try_set_permits(3));
  EXPECT_FALSE(sem.try_set_permits(3));
  EXPECT_EQ(server.command({"GET", name}).as_string(), "3");

  const long long before = epoch_ms_now();
  const std::string leased = sem.acquire(10s);
  const long long after = epoch_ms_now();
  EXPECT_TRUE(is_hex_id(leased)) << leased;
  EXPECT_EQ(server.command({"GET", name}).as_string(), "2");
  EXPECT_EQ(server.command({"TYPE", zset}).as_string(), "zset");
  // The member is the 16 raw bytes, the score the epoch ms deadline (by the server's clock,
  // which is this host's).
  const auto score = std::stoll(server.command({"ZSCORE", zset, raw_id(leased)}).as_string());
  EXPECT_GE(score, before + 10000);
  EXPECT_LE(score, after + 10000);
  EXPECT_TRUE(server.command({"ZSCORE", zset, leased}).is_nil());  // not the hex text
  const auto remaining = sem.remaining_lease(leased);
  EXPECT_GT(remaining, 5s);
  EXPECT_LE(remaining, 10s);

  const std::string forever = sem.acquire();
  EXPECT_EQ(server.command({"ZSCORE", zset, raw_id(forever)}).as_string(), "922337203685477");
  EXPECT_EQ(sem.remaining_lease(forever), redisync::Duration{-1});
  EXPECT_NE(leased, forever);

  auto more = sem.try_acquire_for(0ms, 5s);
  ASSERT_TRUE(more.has_value());
  EXPECT_FALSE(sem.try_acquire().has_value());
  EXPECT_EQ(sem.available_permits(), 0);
  EXPECT_EQ(server.command({"ZCARD", zset}).as_integer(), 3);

  EXPECT_TRUE(sem.update_lease(forever, 20s));
  EXPECT_GT(sem.remaining_lease(forever), 15s);
  EXPECT_TRUE(sem.update_lease(leased, redisync::PermitExpirableSemaphore::no_expiry));
  EXPECT_EQ(sem.remaining_lease(leased), redisync::Duration{-1});

  sem.release(leased);
  EXPECT_TRUE(sem.try_release(forever));
  EXPECT_FALSE(sem.try_release(forever));
  sem.release(*more);
  EXPECT_EQ(sem.available_permits(), 3);
  EXPECT_EQ(server.command({"ZCARD", zset}).as_integer(), 0);
}

TEST(PermitExpirableSemaphoreTest, ExpiredPermitsAreReclaimed) {
  RedisServer server;
  redisync::Client client(config_for(server));
  const auto name = unique_name("pes:");
  auto sem = client.permit_expirable_semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(2));
  const auto ids = sem.acquire(2, 200ms);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_EQ(sem.available_permits(), 0);
  EXPECT_TRUE(wait_until([&] { return sem.available_permits() == 2; }, 5s, 50ms));
  EXPECT_EQ(server.command({"ZCARD", "{" + name + "}:timeout"}).as_integer(), 0);
  // The expired ids are no longer held.
  EXPECT_FALSE(sem.try_release(ids[0]));
  EXPECT_FALSE(sem.update_lease(ids[1], 10s));
  expect_error<redisync::UnknownPermitError>([&] { sem.remaining_lease(ids[1]); },
                                             {ids[1], name});
  EXPECT_EQ(sem.available_permits(), 2);
}

TEST(PermitExpirableSemaphoreTest, BlockedAcquirerGetsThePermitOfAKilledHolder) {
  RedisServer server;
  const auto name = unique_name("pes:");
  redisync::Client client(config_for(server));
  auto sem = client.permit_expirable_semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(1));

  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = redisync::test::detail::spawn_process(
      {REDISYNC_TEST_WORKER, "pes-hold", server.url(), name, "1500"}, fds[1]);
  close(fds[1]);
  char buf[33] = {};
  std::size_t got = 0;
  while (got < 32) {
    const ssize_t n = read(fds[0], buf + got, 32 - got);
    ASSERT_GT(n, 0) << "worker printed no permit id";
    got += static_cast<std::size_t>(n);
  }
  close(fds[0]);
  const std::string held(buf, 32);
  ASSERT_TRUE(is_hex_id(held)) << held;
  EXPECT_FALSE(server.command({"ZSCORE", "{" + name + "}:timeout", raw_id(held)}).is_nil());

  const long long calls_before = evalsha_calls(server);
  auto waiter = std::async(std::launch::async, [&] { return sem.acquire(30s); });
  ASSERT_TRUE(wait_until([&] { return subscribed_to(server, "redisson_sc:{" + name + "}"); }, 5s));
  ::kill(pid, SIGKILL);
  int status;
  redisync::test::detail::reap_within(pid, 5s, &status);

  // No release message will come: the waiter sleeps until the holder's lease ends and its
  // retry then reclaims the permit.
  ASSERT_EQ(waiter.wait_for(20s), std::future_status::ready);
  const std::string mine = waiter.get();
  EXPECT_TRUE(is_hex_id(mine));
  EXPECT_NE(mine, held);
  // First attempt, the attempt after subscribing, the one at the lease's end (+ slack):
  // not a polling loop.
  RecordProperty("evalsha_calls", static_cast<int>(evalsha_calls(server) - calls_before));
  EXPECT_LE(evalsha_calls(server) - calls_before, 6);
  EXPECT_FALSE(sem.try_release(held));
  sem.release(mine);
  EXPECT_EQ(sem.available_permits(), 1);
}

TEST(PermitExpirableSemaphoreTest, ReleaseWakesABlockedAcquirer) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const auto name = unique_name("pes:");
  auto sem_a = a.permit_expirable_semaphore(name);
  ASSERT_TRUE(sem_a.try_set_permits(1));
  const auto id = sem_a.acquire();  // no expiry: only a release frees it
  auto waiter = std::async(std::launch::async, [&] {
    return b.permit_expirable_semaphore(name).try_acquire_for(30s, 10s);
  });
  ASSERT_TRUE(wait_until([&] { return subscribed_to(server, "redisson_sc:{" + name + "}"); }, 5s));
  EXPECT_EQ(waiter.wait_for(200ms), std::future_status::timeout);
  sem_a.release(id);
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
  auto got = waiter.get();
  ASSERT_TRUE(got.has_value());
  EXPECT_GT(sem_a.remaining_lease(*got), 0ms);
}

TEST(PermitExpirableSemaphoreTest, ReleasingSeveralIsAllOrNothing) {
  RedisServer server;
  redisync::Client client(config_for(server));
  const auto name = unique_name("pes:");
  auto sem = client.permit_expirable_semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(4));
  auto ids = sem.acquire(3, 30s);
  ASSERT_EQ(ids.size(), 3u);
  EXPECT_EQ(std::set<std::string>(ids.begin(), ids.end()).size(), 3u);
  EXPECT_EQ(sem.available_permits(), 1);

  const std::string stranger(32, 'a');
  auto with_unknown = ids;
  with_unknown.push_back(stranger);
  expect_error<redisync::UnknownPermitError>([&] { sem.release(with_unknown); },
                                             {stranger, name, "none"});
  EXPECT_EQ(sem.available_permits(), 1);  // nothing released
  try {
    sem.release(with_unknown);
  } catch (const redisync::Error& e) {
    EXPECT_EQ(e.value(), redisync::errc::unknown_permit);
  }
  expect_error<redisync::InvalidArgument>(
      [&] { sem.release(std::vector<std::string>{ids[0], ids[0]}); }, {ids[0], "twice"});
  sem.release(std::vector<std::string>{});  // nothing to do

  sem.release(ids);
  EXPECT_EQ(sem.available_permits(), 4);
  expect_error<redisync::UnknownPermitError>([&] { sem.release(ids); }, {ids[0]});
  expect_error<redisync::UnknownPermitError>([&] { sem.release(ids[1]); },
                                             {ids[1], name, "not held"});
  EXPECT_FALSE(sem.try_acquire_for(5, 0ms, 1s).size());
}

TEST(PermitExpirableSemaphoreTest, SetAndAddPermits) {
  RedisServer server;
  redisync::Client client(config_for(server));
  const auto name = unique_name("pes:");
  auto sem = client.permit_expirable_semaphore(name);
  sem.set_permits(3);  // absent: set
  EXPECT_EQ(sem.available_permits(), 3);
  const auto ids = sem.acquire(2, 30s);
  sem.set_permits(5);  // total 3 -> 5: available 1 -> 3
  EXPECT_EQ(sem.available_permits(), 3);
  sem.set_permits(1);  // total 5 -> 1 while 2 are held: available goes negative
  EXPECT_EQ(sem.available_permits(), -1);
  EXPECT_FALSE(sem.try_acquire().has_value());
  sem.release(ids);
  EXPECT_EQ(sem.available_permits(), 1);
  sem.add_permits(-3);
  EXPECT_EQ(sem.available_permits(), -2);
  sem.add_permits(4);
  EXPECT_EQ(sem.available_permits(), 2);
  EXPECT_FALSE(sem.try_set_permits(10));
}

TEST(PermitExpirableSemaphoreTest, BadInputGetsClearErrors) {
  RedisServer server;
  redisync::Client client(config_for(server));
  const auto name = unique_name("pes:");
  auto sem = client.permit_expirable_semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(1));
  using IA = redisync::InvalidArgument;
  expect_error<IA>([&] { sem.acquire(0, 1s); }, {"permits", name, ">= 1", "0"});
  expect_error<IA>([&] { sem.acquire(-1, 1s); }, {"permits", "-1"});
  expect_error<IA>([&] { sem.try_acquire_for(0, 1s, 1s); }, {"permits"});
  expect_error<IA>([&] { sem.acquire(0ms); }, {"lease", name});
  expect_error<IA>([&] { sem.acquire(-5ms); }, {"lease", "-5"});
  expect_error<IA>([&] { sem.try_acquire_for(1s, 0ms); }, {"lease"});
  expect_error<IA>([&] { sem.try_set_permits(-1); }, {"permits", "-1"});
  expect_error<IA>([&] { sem.set_permits(-1); }, {"permits"});
  expect_error<IA>([&] { sem.async_acquire(0, 1s, asio::use_future); }, {"permits"});
  expect_error<IA>([&] { client.permit_expirable_semaphore(""); }, {"name"});

  // Malformed ids: wrong length, not hex; nothing is sent to the server.
  expect_error<IA>([&] { sem.release("xyz"); }, {"malformed permit id", "'xyz'", "3 chars"});
  expect_error<IA>([&] { sem.release(std::string(31, 'a')); }, {"malformed", "31 chars"});
  std::string bad_digit(32, 'a');
  bad_digit[31] = 'g';
  expect_error<IA>([&] { sem.try_release(bad_digit); }, {"malformed", "not a hex digit", "31"});
  expect_error<IA>([&] { sem.update_lease("", 1s); }, {"malformed", "0 chars"});
  expect_error<IA>([&] { sem.remaining_lease(std::string(32, ' ')); }, {"malformed"});
  expect_error<IA>([&] { sem.release(std::vector<std::string>{std::string(32, 'a'), "zz"}); },
                   {"malformed", "'zz'"});
  expect_error<IA>([&] { sem.async_release("nope", asio::use_future).get(); }, {"malformed"});
  expect_error<IA>([&] { sem.update_lease(std::string(32, 'a'), 0ms); }, {"lease"});

  // Unknown (well-formed) ids: UnknownPermitError naming the id and the semaphore.
  const std::string unknown = "0123456789abcdef0123456789ABCDEF";
  expect_error<redisync::UnknownPermitError>([&] { sem.release(unknown); }, {unknown, name});
  expect_error<redisync::UnknownPermitError>([&] { sem.remaining_lease(unknown); }, {unknown});
  expect_error<redisync::UnknownPermitError>(
      [&] { sem.async_release(unknown, asio::use_future).get(); }, {unknown});
  EXPECT_FALSE(sem.try_release(unknown));
  EXPECT_FALSE(sem.update_lease(unknown, 1s));
  EXPECT_EQ(sem.available_permits(), 1);
  // Upper-case hex is accepted for a held id.
  const auto id = sem.acquire(10s);
  std::string upper = id;
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  sem.release(upper);
  EXPECT_EQ(sem.available_permits(), 1);
}

TEST(PermitExpirableSemaphoreTest, AsyncForms) {
  // Declared first: the Clients (and their I/O threads) end before it does.
  asio::io_context io;
  RedisServer server;
  redisync::Client client(config_for(server));
  auto sem = client.permit_expirable_semaphore(unique_name("pes:"));
  ASSERT_TRUE(sem.try_set_permits(2));
  auto ids = sem.async_acquire(2, 10s, asio::use_future).get();
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_TRUE(sem.async_try_acquire(1, 0ms, 10s, asio::use_future).get().empty());
  auto pending = sem.async_try_acquire(1, 20s, 10s, asio::use_future);
  sem.async_release(ids[0], asio::use_future).get();
  auto third = pending.get();
  ASSERT_EQ(third.size(), 1u);

  std::vector<std::string> in_coroutine;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await sem.async_release(ids[1], asio::use_awaitable);
        co_await sem.async_release(third[0], asio::use_awaitable);
        in_coroutine = co_await sem.async_acquire(2, 5s, asio::use_awaitable);
      },
      asio::detached);
  io.run();
  EXPECT_EQ(in_coroutine.size(), 2u);
  EXPECT_EQ(sem.available_permits(), 0);
}
