// SPDX-License-Identifier: Apache-2.0
// redisync::Semaphore against a real redis-server: the Redisson layout (docs/wire-format.md §7),
// bounded concurrency across processes, counts, negative permits, push wake-ups, local
// FIFO fairness, bad input, async forms.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>
#include <atomic>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "redisync/redisync.h"
#include "support/expect_error.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/server_stats.h"
#include "support/test_util.h"
#include "support/worker.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::expect_error;
using redisync::test::config_for;
using redisync::test::evalsha_calls;
using redisync::test::no_channels;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

using redisync::test::spawn_worker;
using redisync::test::subscribed_to;

}  // namespace

TEST(SemaphoreTest, LayoutAndCounts) {
  RedisServer server;
  redisync::Client client(config_for(server));
  const auto name = unique_name("sem:");
  auto sem = client.semaphore(name);
  EXPECT_EQ(sem.available_permits(), 0);
  EXPECT_FALSE(sem.try_acquire());  // absent key = no permits
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);

  EXPECT_TRUE(sem.try_set_permits(5));
  EXPECT_FALSE(sem.try_set_permits(7));
  EXPECT_EQ(server.command({"TYPE", name}).as_string(), "string");
  EXPECT_EQ(server.command({"GET", name}).as_string(), "5");
  EXPECT_EQ(server.command({"PTTL", name}).as_integer(), -1);

  sem.acquire(2);
  EXPECT_EQ(sem.available_permits(), 3);
  EXPECT_FALSE(sem.try_acquire(4));  // all or nothing
  EXPECT_EQ(sem.available_permits(), 3);
  EXPECT_TRUE(sem.try_acquire(3));
  EXPECT_FALSE(sem.try_acquire_for(50ms));
  EXPECT_FALSE(sem.try_acquire_until(std::chrono::steady_clock::now() + 50ms));
  sem.release();
  EXPECT_EQ(server.command({"GET", name}).as_string(), "1");
  sem.release(4);
  EXPECT_EQ(sem.drain_permits(), 5);
  EXPECT_EQ(server.command({"GET", name}).as_string(), "0");
  EXPECT_EQ(sem.drain_permits(), 0);

  // Zero permits: no server call at all.
  const long long before = evalsha_calls(server);
  sem.acquire(0);
  EXPECT_TRUE(sem.try_acquire(0));
  EXPECT_TRUE(sem.try_acquire_for(0, 1s));
  sem.release(0);
  EXPECT_EQ(evalsha_calls(server), before);

  EXPECT_TRUE(sem.release_if_exists(2));
  EXPECT_EQ(sem.available_permits(), 2);
  EXPECT_TRUE(sem.remove());
  EXPECT_FALSE(sem.remove());
  EXPECT_FALSE(sem.release_if_exists(2));
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
  EXPECT_EQ(sem.drain_permits(), 0);
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);  // drain creates nothing

  // release() creates the count; try_set_permits with a ttl sets an expiry.
  sem.release(2);
  EXPECT_EQ(server.command({"GET", name}).as_string(), "2");
  auto other = client.semaphore(unique_name("sem:"));
  EXPECT_TRUE(other.try_set_permits(1, 10s));
  const long long pttl = server.command({"PTTL", other.name()}).as_integer();
  EXPECT_GT(pttl, 0);
  EXPECT_LE(pttl, 10000);
}

TEST(SemaphoreTest, AtMostNOfEightProcessesInsideTheSection) {
  RedisServer server;
  redisync::Client client(config_for(server));
  const auto name = unique_name("sem:");
  constexpr int kPermits = 3;
  constexpr int kWorkers = 8;
  constexpr int kIterations = 25;
  ASSERT_TRUE(client.semaphore(name).try_set_permits(kPermits));
  const std::string history = redisync::test::temp_file("history.txt");

  std::vector<pid_t> pids;
  for (int p = 0; p < kWorkers; ++p) {
    pids.push_back(spawn_worker(
        {"sem-section", server.url(), name, history, std::to_string(kIterations), "2"}));
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_TRUE(redisync::test::detail::reap_within(pid, 120s, &status));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }

  struct Event {
    long long ns;
    int delta;
  };
  std::vector<Event> events;
  std::ifstream in(history);
  std::string line;
  int enters = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string kind;
    long long ns = 0;
    fields >> kind >> ns;
    ASSERT_TRUE(kind == "enter" || kind == "exit") << line;
    events.push_back({ns, kind == "enter" ? 1 : -1});
    if (kind == "enter") ++enters;
  }
  EXPECT_EQ(enters, kWorkers * kIterations);
  EXPECT_EQ(events.size(), static_cast<std::size_t>(2 * kWorkers * kIterations));
  // Monotonic clock (system-wide): at equal times count exits first.
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.ns != b.ns ? a.ns < b.ns : a.delta < b.delta;
  });
  int inside = 0;
  int max_inside = 0;
  for (const auto& e : events) {
    inside += e.delta;
    max_inside = std::max(max_inside, inside);
    ASSERT_GE(inside, 0);
  }
  EXPECT_EQ(inside, 0);
  RecordProperty("max_inside", max_inside);
  EXPECT_LE(max_inside, kPermits);
  EXPECT_GT(max_inside, 0);
  EXPECT_EQ(client.semaphore(name).available_permits(), kPermits);
}

TEST(SemaphoreTest, AcquireOfFourWaitsForTwoReleasesOfTwo) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const auto name = unique_name("sem:");
  auto sem_a = a.semaphore(name);
  ASSERT_TRUE(sem_a.try_set_permits(0));
  auto waiter = std::async(std::launch::async, [&] {
    b.semaphore(name).acquire(4);
    return true;
  });
  ASSERT_TRUE(wait_until([&] { return subscribed_to(server, "redisson_sc:{" + name + "}"); }, 5s));
  sem_a.release(2);
  // Two permits are not enough: the waiter is woken, retries, and waits again.
  EXPECT_EQ(waiter.wait_for(300ms), std::future_status::timeout);
  EXPECT_EQ(sem_a.available_permits(), 2);
  sem_a.release(2);
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
  EXPECT_EQ(sem_a.available_permits(), 0);
}

TEST(SemaphoreTest, NegativePermitsBlockUntilAddedBack) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const auto name = unique_name("sem:");
  auto sem = a.semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(2));
  sem.add_permits(-5);
  EXPECT_EQ(sem.available_permits(), -3);
  EXPECT_EQ(server.command({"GET", name}).as_string(), "-3");
  EXPECT_FALSE(sem.try_acquire());

  auto waiter = std::async(std::launch::async, [&] { return b.semaphore(name).try_acquire_for(30s); });
  ASSERT_TRUE(wait_until([&] { return subscribed_to(server, "redisson_sc:{" + name + "}"); }, 5s));
  sem.release(3);  // back to 0: still nothing to take
  EXPECT_EQ(waiter.wait_for(300ms), std::future_status::timeout);
  EXPECT_EQ(sem.available_permits(), 0);
  sem.add_permits(1);
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
  EXPECT_EQ(sem.available_permits(), 0);
  // Draining a negative count returns it and resets to 0.
  sem.add_permits(-2);
  EXPECT_EQ(sem.drain_permits(), -2);
  EXPECT_EQ(sem.available_permits(), 0);
}

TEST(SemaphoreTest, OneReleaseWakesAsManyLocalWaitersAsPermits) {
  RedisServer server;
  redisync::Client holder(config_for(server)), waiters(config_for(server));
  const auto name = unique_name("sem:");
  ASSERT_TRUE(holder.semaphore(name).try_set_permits(0));
  std::atomic<int> got{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      if (waiters.semaphore(name).try_acquire_for(20s)) ++got;
    });
  }
  ASSERT_TRUE(wait_until([&] { return subscribed_to(server, "redisson_sc:{" + name + "}"); }, 5s));
  std::this_thread::sleep_for(100ms);
  holder.semaphore(name).release(4);
  for (auto& t : threads) t.join();
  EXPECT_EQ(got.load(), 4);
  EXPECT_EQ(holder.semaphore(name).available_permits(), 0);
}

TEST(SemaphoreTest, WaiterIsWokenByPushNotPolling) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const auto name = unique_name("sem:");
  ASSERT_TRUE(a.semaphore(name).try_set_permits(0));
  auto waiter = std::async(std::launch::async, [&] { return b.semaphore(name).try_acquire_for(30s); });
  ASSERT_TRUE(wait_until([&] { return subscribed_to(server, "redisson_sc:{" + name + "}"); }, 5s));
  std::this_thread::sleep_for(300ms);  // asleep; a polling waiter would keep calling scripts
  const long long before = evalsha_calls(server);
  a.semaphore(name).release();
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
  EXPECT_LE(evalsha_calls(server) - before, 1 + 3);  // the release plus a few attempts
}

TEST(SemaphoreTest, LocalWaiterForManyIsNotStarvedByLaterWaitersForFewer) {
  RedisServer server;
  redisync::Client client(config_for(server)), outsider(config_for(server));
  const auto name = unique_name("sem:");
  auto sem = client.semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(3));

  // Two threads keep taking and returning one permit each: the count rarely reaches 3.
  std::atomic<bool> stop{false};
  std::atomic<int> small_rounds{0};
  std::vector<std::thread> small;
  for (int i = 0; i < 2; ++i) {
    small.emplace_back([&] {
      while (!stop) {
        if (sem.try_acquire_for(1, 5s)) {
          std::this_thread::sleep_for(5ms);
          sem.release(1);
          ++small_rounds;
        }
      }
    });
  }
  ASSERT_TRUE(wait_until([&] { return small_rounds.load() >= 4; }, 10s));
  // The waiter for 3 queues ahead of the small threads' next acquisitions and gets all 3.
  EXPECT_TRUE(sem.try_acquire_for(3, 20s));
  stop = true;
  sem.release(3);
  for (auto& t : small) t.join();
  EXPECT_EQ(sem.available_permits(), 3);
}

TEST(SemaphoreTest, ZeroWaitTryDoesNotOvertakeALocalWaiter) {
  RedisServer server;
  redisync::Client client(config_for(server)), outsider(config_for(server));
  const auto name = unique_name("sem:");
  auto sem = client.semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(2));
  auto big = std::async(std::launch::async, [&] { return sem.try_acquire_for(3, 30s); });
  ASSERT_TRUE(wait_until([&] { return subscribed_to(server, "redisson_sc:{" + name + "}"); }, 5s));
  EXPECT_FALSE(sem.try_acquire(1));        // same Client: queued behind the waiter for 3
  EXPECT_FALSE(sem.try_acquire_for(1, 200ms));  // times out in the local queue
  EXPECT_EQ(sem.available_permits(), 2);
  EXPECT_TRUE(outsider.semaphore(name).try_acquire(1));  // no order across Clients
  outsider.semaphore(name).release(2);
  ASSERT_EQ(big.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(big.get());
  EXPECT_EQ(sem.available_permits(), 0);
}

TEST(SemaphoreTest, TimedOutWaitLeavesNoSubscription) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto sem = client.semaphore(unique_name("sem:"));
  EXPECT_FALSE(sem.try_acquire_for(2, 200ms));
  EXPECT_TRUE(wait_until([&] { return no_channels(server); }, 3s));
}

TEST(SemaphoreTest, BadInputGetsClearErrors) {
  RedisServer server;
  redisync::Client client(config_for(server));
  const auto name = unique_name("sem:");
  auto sem = client.semaphore(name);
  expect_error<redisync::InvalidArgument>([&] { sem.acquire(-1); }, {"permits", name, "-1"});
  expect_error<redisync::InvalidArgument>([&] { sem.try_acquire(-2); }, {"permits", "-2"});
  expect_error<redisync::InvalidArgument>([&] { sem.try_acquire_for(-3, 1s); }, {"permits"});
  expect_error<redisync::InvalidArgument>([&] { sem.release(-1); }, {"permits", name});
  expect_error<redisync::InvalidArgument>([&] { sem.release_if_exists(-1); }, {"permits"});
  expect_error<redisync::InvalidArgument>([&] { sem.try_set_permits(-1); }, {"permits"});
  expect_error<redisync::InvalidArgument>([&] { sem.try_set_permits(1, 0ms); }, {"ttl"});
  expect_error<redisync::InvalidArgument>([&] { sem.async_acquire(-1, asio::use_future); },
                                          {"permits"});
  expect_error<redisync::InvalidArgument>([&] { client.semaphore(""); }, {"name"});
  try {
    sem.acquire(-1);
  } catch (const redisync::Error& e) {
    EXPECT_EQ(e.value(), redisync::errc::invalid_argument);
  }
  // A key of another type: the server's error, naming the semaphore.
  server.command({"HSET", name, "f", "v"});
  expect_error<redisync::ServerError>([&] { sem.acquire(1); }, {name, "WRONGTYPE"});
  expect_error<redisync::ServerError>([&] { sem.release(1); }, {name, "WRONGTYPE"});
  server.command({"SET", name, "not-a-number"});
  expect_error<redisync::ServerError>([&] { sem.available_permits(); }, {name, "not-a-number"});
}

TEST(SemaphoreTest, NamesWithBracesUseThemAsTheTag) {
  RedisServer server;
  redisync::Client client(config_for(server)), other(config_for(server));
  const std::string name = "{" + unique_name("tag") + "}:sem";
  ASSERT_TRUE(client.semaphore(name).try_set_permits(0));
  auto waiter = std::async(std::launch::async, [&] { return other.semaphore(name).try_acquire_for(20s); });
  ASSERT_TRUE(wait_until([&] { return subscribed_to(server, "redisson_sc:" + name); }, 5s));
  client.semaphore(name).release();
  ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
}

TEST(SemaphoreTest, AsyncFormsWithCallbackFutureAndCoroutine) {
  // Declared first: the Clients (and their I/O threads) end before it does.
  asio::io_context io;
  RedisServer server;
  redisync::Client client(config_for(server));
  auto sem = client.semaphore(unique_name("sem:"));
  EXPECT_FALSE(sem.async_try_acquire(1, 0ms, asio::use_future).get());
  sem.async_release(2, asio::use_future).get();
  EXPECT_EQ(sem.available_permits(), 2);

  std::promise<void> acquired;
  sem.async_acquire(2, [&](std::exception_ptr e) {
    if (e) {
      acquired.set_exception(e);
    } else {
      acquired.set_value();
    }
  });
  acquired.get_future().get();
  EXPECT_EQ(sem.available_permits(), 0);

  // A waiting async acquire completes when permits arrive.
  auto pending = sem.async_try_acquire(1, 20s, asio::use_future);
  sem.release(1);
  EXPECT_TRUE(pending.get());

  bool ok = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await sem.async_release(3, asio::use_awaitable);
        co_await sem.async_acquire(2, asio::use_awaitable);
        ok = co_await sem.async_try_acquire(1, 1s, asio::use_awaitable);
      },
      asio::detached);
  io.run();
  EXPECT_TRUE(ok);
  EXPECT_EQ(sem.available_permits(), 0);
}
