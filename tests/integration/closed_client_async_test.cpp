// SPDX-License-Identifier: Apache-2.0
// Async calls on handles that outlived their Client. The blocking forms throw
// ClientClosedError (io_thread_test.cpp); the async forms must complete with it too. They used
// to post their start onto the closed Client's stopped I/O context, where nothing runs any
// more: the callback was never called, a future never became ready, a coroutine never resumed
// (a waiter hung for good).
#include <gtest/gtest.h>

#include <asio/use_future.hpp>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::config_for;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

// What each async call's completion said, by call.
class Outcomes {
 public:
  // A completion handler for `what` that records its error class.
  auto handler(const std::string& what) {
    {
      std::lock_guard g(m_);
      expected_.push_back(what);
    }
    return [this, what](std::exception_ptr e, auto&&...) { record(what, e); };
  }
  std::size_t done() const {
    std::lock_guard g(m_);
    return seen_.size();
  }
  std::size_t expected() const {
    std::lock_guard g(m_);
    return expected_.size();
  }
  // The calls that never completed, and those that completed without ClientClosedError.
  std::string problems() const {
    std::lock_guard g(m_);
    std::string out;
    for (const auto& what : expected_) {
      bool found = false;
      for (const auto& [w, closed] : seen_) {
        if (w != what) continue;
        found = true;
        if (!closed) out += what + ": completed without ClientClosedError\n";
      }
      if (!found) out += what + ": never completed\n";
    }
    return out;
  }

 private:
  void record(const std::string& what, std::exception_ptr e) {
    bool closed = false;
    try {
      if (e) std::rethrow_exception(e);
    } catch (const redisync::ClientClosedError&) {
      closed = true;
    } catch (...) {
    }
    std::lock_guard g(m_);
    seen_.emplace_back(what, closed);
  }
  mutable std::mutex m_;
  std::vector<std::string> expected_;
  std::vector<std::pair<std::string, bool>> seen_;
};

TEST(ClosedClientAsync, EveryAsyncCallOnAHandleThatOutlivedItsClientCompletesWithClientClosed) {
  RedisServer server;
  std::optional<redisync::Client> client(std::in_place, config_for(server));
  auto lock = client->lock(unique_name("closed:"));
  auto fair = client->fair_lock(unique_name("closed:"));
  auto write = client->read_write_lock(unique_name("closed:")).write_lock();
  auto sem = client->semaphore(unique_name("closed:"));
  auto pes = client->permit_expirable_semaphore(unique_name("closed:"));
  auto latch = client->count_down_latch(unique_name("closed:"));
  ASSERT_TRUE(latch.try_set_count(1));
  redisync::MultiLock multi({client->lock(unique_name("closed:")),
                             client->lock(unique_name("closed:"))});
  auto limiter = client->rate_limiter(unique_name("closed:"));
  ASSERT_TRUE(limiter.try_set_rate(redisync::RateType::overall, 1, 1000ms));
  client.reset();  // the handles outlive the Client

  Outcomes o;
  lock.async_lock(1, o.handler("Lock::async_lock"));
  lock.async_try_lock(1, 5s, 0ms, o.handler("Lock::async_try_lock"));
  lock.async_unlock(1, o.handler("Lock::async_unlock"));
  fair.async_lock(1, o.handler("FairLock::async_lock"));
  write.async_lock(1, o.handler("WriteLock::async_lock"));
  sem.async_acquire(1, o.handler("Semaphore::async_acquire"));
  sem.async_try_acquire(1, 5s, o.handler("Semaphore::async_try_acquire"));
  sem.async_release(1, o.handler("Semaphore::async_release"));
  pes.async_acquire(1, 10s, o.handler("PermitExpirableSemaphore::async_acquire"));
  pes.async_release(std::string(32, 'a'), o.handler("PermitExpirableSemaphore::async_release"));
  latch.async_wait(o.handler("CountDownLatch::async_wait"));
  latch.async_wait_for(5s, o.handler("CountDownLatch::async_wait_for"));
  multi.async_lock(1, o.handler("MultiLock::async_lock"));
  multi.async_try_lock(1, 5s, 0ms, o.handler("MultiLock::async_try_lock"));
  multi.async_unlock(1, o.handler("MultiLock::async_unlock"));
  limiter.async_acquire(1, o.handler("RateLimiter::async_acquire"));
  limiter.async_release(1, o.handler("RateLimiter::async_release"));
  limiter.async_available_permits(o.handler("RateLimiter::async_available_permits"));

  // Bounded: a completion that has not come within 10 s never will.
  wait_until([&] { return o.done() >= o.expected(); }, 10s);
  EXPECT_EQ(o.problems(), "");

  // A future of a closed Client's handle becomes ready, with the error.
  auto f = sem.async_acquire(1, asio::use_future);
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready) << "the future never became ready";
  EXPECT_THROW(f.get(), redisync::ClientClosedError);
}

// A Client closed while another thread keeps starting async calls on its handles: every call
// that was started completes, whether it ran before the close (then with its own outcome or
// ClientClosedError) or after it (ClientClosedError). A start that checked "open" just before
// the close and posted its work just after used to be lost: its work sat on the stopped I/O
// context and its handler was never called.
TEST(ClosedClientAsync, CallsStartedWhileTheClientClosesAllComplete) {
  RedisServer server;
  const auto name = unique_name("closing:");
  constexpr int kRounds = 40;      // closes, each racing one starting thread
  constexpr int kMaxCalls = 4000;  // per round, bound on the starting thread
  std::atomic<long> started{0};
  std::atomic<long> locks_done{0};
  std::atomic<long> releases_done{0};
  std::atomic<long> multis_done{0};
  for (int round = 0; round < kRounds; ++round) {
    std::optional<redisync::Client> client(std::in_place, config_for(server));
    auto lock = client->lock(name);
    auto sem = client->semaphore(name + ":sem");
    redisync::MultiLock multi({client->lock(name + ":a"), client->fair_lock(name + ":b")});
    std::atomic<bool> stop{false};
    std::atomic<bool> running{false};
    std::thread starter([&] {
      running = true;
      for (int i = 0; i < kMaxCalls && !stop; ++i) {
        started.fetch_add(1);
        lock.async_try_lock(1, 0ms, 1s, [&](std::exception_ptr, bool) { locks_done.fetch_add(1); });
        sem.async_release(1, [&](std::exception_ptr) { releases_done.fetch_add(1); });
        multi.async_try_lock(2, 0ms, 1s,
                             [&](std::exception_ptr, bool) { multis_done.fetch_add(1); });
      }
    });
    while (!running) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::microseconds(200 * (round % 10)));
    client.reset();
    stop = true;
    starter.join();
  }
  // Bounded: a completion that has not come within 10 s never will.
  wait_until([&] { return locks_done + releases_done + multis_done >= 3 * started; }, 10s);
  EXPECT_EQ(locks_done.load(), started.load()) << "Lock::async_try_lock calls never completed";
  EXPECT_EQ(releases_done.load(), started.load())
      << "Semaphore::async_release calls never completed";
  EXPECT_EQ(multis_done.load(), started.load())
      << "MultiLock::async_try_lock calls never completed";
}

}  // namespace
