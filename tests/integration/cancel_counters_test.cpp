// SPDX-License-Identifier: Apache-2.0
// Per-operation cancellation of the async waits of Semaphore, PermitExpirableSemaphore and
// CountDownLatch (Asio cancellation slots; CancelledError) against a real server: a cancelled
// wait ends at once, takes nothing and leaves its subscription; a semaphore waiter held back
// at the Client's local gate (behind a waiter for more permits) is cancelled there without a
// server call; a cancellation after the permits were taken changes nothing.
#include <gtest/gtest.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "redisync/redisync.h"
#include "support/expect_error.h"
#include "support/redis_server.h"
#include "support/server_stats.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using namespace redisync::test;  // RedisServer, config_for, unique_name, wait_until, errc_of

namespace {

std::string semaphore_channel(const std::string& name) { return "redisson_sc:{" + name + "}"; }

// A completion's result, set once: a handler that runs again or late (after a failed
// assertion ended the test) changes nothing.
template <class T>
class Once {
 public:
  void set(T value) {
    if (!state_->set.exchange(true)) state_->promise.set_value(std::move(value));
  }
  std::future<T> get_future() { return state_->promise.get_future(); }

 private:
  struct State {
    std::promise<T> promise;
    std::atomic<bool> set{false};
  };
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

// Waits for `result` (bounded); false when the wait went on.
template <class T>
bool ready(std::future<T>& result) {
  return result.wait_for(5s) == std::future_status::ready;
}

}  // namespace

TEST(CancelCountersTest, ACancelledSemaphoreWaitEndsAtOnceAndTakesNothing) {
  RedisServer server;
  redisync::Client client(config_for(server));
  const auto name = unique_name("cancel-sem:");
  auto sem = client.semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(0));
  asio::cancellation_signal cancel;
  Once<AsyncOutcome> done;
  sem.async_try_acquire(1, 20s,
                        asio::bind_cancellation_slot(
                            cancel.slot(), [done](std::exception_ptr e, bool acquired) mutable {
                              done.set(AsyncOutcome{true, acquired, errc_of(e)});
                            }));
  ASSERT_TRUE(wait_until([&] { return subscribers(server, semaphore_channel(name)) == 1; }, 5s));
  cancel.emit(asio::cancellation_type::terminal);
  auto result = done.get_future();
  ASSERT_TRUE(ready(result)) << "the cancelled wait went on";
  const AsyncOutcome out = result.get();
  EXPECT_EQ(out.error, "cancelled");
  EXPECT_FALSE(out.acquired);
  EXPECT_TRUE(wait_until([&] { return subscribers(server, semaphore_channel(name)) == 0; }, 2s))
      << "the cancelled waiter kept its subscription";
  // A permit released now stays available: the cancelled waiter took nothing.
  sem.release(1);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(sem.available_permits(), 1);
}

TEST(CancelCountersTest, AWaiterHeldBackAtTheLocalGateIsCancelledThere) {
  // Waiter A wants 2 permits and runs; waiter B of the same Client wants 1 and is held back
  // behind it at the Client's gate (it never talks to the server while A waits). Cancelling B
  // ends B at once and leaves A waiting; cancelling A then ends A.
  RedisServer server;
  redisync::Client client(config_for(server));
  const auto name = unique_name("cancel-gate:");
  auto sem = client.semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(0));
  asio::cancellation_signal cancel_a, cancel_b;
  Once<AsyncOutcome> done_a, done_b;
  sem.async_acquire(
      2, asio::bind_cancellation_slot(cancel_a.slot(), [done_a](std::exception_ptr e) mutable {
        done_a.set(AsyncOutcome{true, e == nullptr, errc_of(e)});
      }));
  ASSERT_TRUE(wait_until([&] { return subscribers(server, semaphore_channel(name)) == 1; }, 5s));
  sem.async_try_acquire(1, 20s,
                        asio::bind_cancellation_slot(
                            cancel_b.slot(), [done_b](std::exception_ptr e, bool acquired) mutable {
                              done_b.set(AsyncOutcome{true, acquired, errc_of(e)});
                            }));
  std::this_thread::sleep_for(200ms);  // B reaches the gate (nothing of it shows on the server)
  cancel_b.emit(asio::cancellation_type::terminal);
  auto result_b = done_b.get_future();
  ASSERT_TRUE(ready(result_b)) << "the held-back waiter's cancelled wait went on";
  EXPECT_EQ(result_b.get().error, "cancelled");
  auto result_a = done_a.get_future();
  EXPECT_EQ(result_a.wait_for(300ms), std::future_status::timeout) << "cancelling B ended A's wait";
  cancel_a.emit(asio::cancellation_type::terminal);
  ASSERT_TRUE(ready(result_a)) << "the running waiter's cancelled wait went on";
  EXPECT_EQ(result_a.get().error, "cancelled");
  // Neither took anything.
  sem.release(2);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(sem.available_permits(), 2);
}

TEST(CancelCountersTest, ACancellationAfterTheSemaphoreWasAcquiredChangesNothing) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto sem = client.semaphore(unique_name("cancel-sem-late:"));
  ASSERT_TRUE(sem.try_set_permits(1));
  asio::cancellation_signal cancel;
  Once<AsyncOutcome> done;
  sem.async_try_acquire(1, 5s,
                        asio::bind_cancellation_slot(
                            cancel.slot(), [done](std::exception_ptr e, bool acquired) mutable {
                              done.set(AsyncOutcome{true, acquired, errc_of(e)});
                            }));
  auto result = done.get_future();
  ASSERT_TRUE(ready(result));
  const AsyncOutcome out = result.get();
  EXPECT_EQ(out.error, "");
  EXPECT_TRUE(out.acquired);
  cancel.emit(asio::cancellation_type::terminal);  // too late: nothing happens
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(sem.available_permits(), 0);
}

TEST(CancelCountersTest, ACancelledPermitWaitEndsAtOnceAndTakesNoPermit) {
  RedisServer server;
  redisync::Client client(config_for(server));
  const auto name = unique_name("cancel-pes:");
  auto sem = client.permit_expirable_semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(0));
  asio::cancellation_signal cancel;
  Once<std::pair<std::string, std::size_t>> done;
  sem.async_try_acquire(
      1, 20s, 10s,
      asio::bind_cancellation_slot(
          cancel.slot(), [done](std::exception_ptr e, std::vector<std::string> ids) mutable {
            done.set({errc_of(e), ids.size()});
          }));
  ASSERT_TRUE(wait_until([&] { return subscribers(server, semaphore_channel(name)) == 1; }, 5s));
  cancel.emit(asio::cancellation_type::terminal);
  auto result = done.get_future();
  ASSERT_TRUE(ready(result)) << "the cancelled wait went on";
  const auto [error, ids] = result.get();
  EXPECT_EQ(error, "cancelled");
  EXPECT_EQ(ids, 0u);
  EXPECT_TRUE(wait_until([&] { return subscribers(server, semaphore_channel(name)) == 0; }, 2s));
  sem.add_permits(1);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(sem.available_permits(), 1) << "the cancelled waiter took the permit";
}

TEST(CancelCountersTest, ACancelledLatchWaitEndsAtOnceAndLeavesItsSubscription) {
  RedisServer server;
  redisync::Client client(config_for(server));
  const auto name = unique_name("cancel-latch:");
  const std::string channel = "redisson_countdownlatch__channel__{" + name + "}";
  auto latch = client.count_down_latch(name);
  ASSERT_TRUE(latch.try_set_count(1));
  for (const bool bounded : {false, true}) {
    SCOPED_TRACE(bounded ? "async_wait_for" : "async_wait");
    asio::cancellation_signal cancel;
    Once<AsyncOutcome> done;
    if (bounded) {
      latch.async_wait_for(
          20s, asio::bind_cancellation_slot(cancel.slot(),
                                            [done](std::exception_ptr e, bool opened) mutable {
                                              done.set(AsyncOutcome{true, opened, errc_of(e)});
                                            }));
    } else {
      latch.async_wait(
          asio::bind_cancellation_slot(cancel.slot(), [done](std::exception_ptr e) mutable {
            done.set(AsyncOutcome{true, e == nullptr, errc_of(e)});
          }));
    }
    ASSERT_TRUE(wait_until([&] { return subscribers(server, channel) == 1; }, 5s));
    cancel.emit(asio::cancellation_type::terminal);
    auto result = done.get_future();
    ASSERT_TRUE(ready(result)) << "the cancelled wait went on";
    const AsyncOutcome out = result.get();
    EXPECT_EQ(out.error, "cancelled");
    EXPECT_FALSE(out.acquired);
    EXPECT_TRUE(wait_until([&] { return subscribers(server, channel) == 0; }, 2s))
        << "the cancelled waiter kept its subscription";
  }
  EXPECT_EQ(latch.count(), 1);
}

TEST(CancelCountersTest, ACancelledRateLimiterWaitEndsAtOnceAndTakesNothing) {
  // One permit per minute, taken: a second acquisition sleeps out the window until cancelled
  // (a bounded wait shorter than the window would be refused at once, so it is longer).
  RedisServer server;
  redisync::Client client(config_for(server));
  auto limiter = client.rate_limiter(unique_name("cancel-rate:"));
  limiter.set_rate(redisync::RateType::overall, 1, 60s);
  ASSERT_TRUE(limiter.try_acquire(1));
  for (const bool bounded : {false, true}) {
    SCOPED_TRACE(bounded ? "async_try_acquire" : "async_acquire");
    asio::cancellation_signal cancel;
    Once<AsyncOutcome> done;
    if (bounded) {
      limiter.async_try_acquire(
          1, 120s,
          asio::bind_cancellation_slot(cancel.slot(),
                                       [done](std::exception_ptr e, bool acquired) mutable {
                                         done.set(AsyncOutcome{true, acquired, errc_of(e)});
                                       }));
    } else {
      limiter.async_acquire(
          1, asio::bind_cancellation_slot(cancel.slot(), [done](std::exception_ptr e) mutable {
            done.set(AsyncOutcome{true, e == nullptr, errc_of(e)});
          }));
    }
    std::this_thread::sleep_for(300ms);  // its first attempt is refused; it sleeps
    cancel.emit(asio::cancellation_type::terminal);
    auto result = done.get_future();
    ASSERT_TRUE(ready(result)) << "the cancelled wait went on";
    const AsyncOutcome out = result.get();
    EXPECT_EQ(out.error, "cancelled");
    EXPECT_FALSE(out.acquired);
  }
  EXPECT_EQ(limiter.available_permits(), 0);
  // A release gives the one permit back, and nobody (no cancelled waiter) takes it.
  limiter.release(1);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(limiter.available_permits(), 1);
}
