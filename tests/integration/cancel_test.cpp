// SPDX-License-Identifier: Apache-2.0
// Per-operation cancellation of async lock waits (Asio cancellation slots; CancelledError,
// src/sync/acquire/cancel_signal.h) against a real server: a cancelled wait ends at once and
// leaves nothing behind (no fair-queue entry, no grant registration, no hold), for every lock
// kind, in wake and grant mode; the awaitable operators (`lock || timer`) cancel it; a
// cancellation racing a grant never leaves the lock held by nobody; one that comes after the
// acquisition changes nothing.
#include <gtest/gtest.h>

#include <asio/bind_cancellation_slot.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include "grant_util.h"
#include "redisync/redisync.h"
#include "support/expect_error.h"
#include "support/java_layout.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using namespace redisync::test;         // RedisServer, JavaLayoutClient, wait_until, errc_of...
using namespace redisync::test::grant;  // grant_config

namespace {

// A lock kind under test: how to make it, and how to see that a waiter of it is waiting.
struct WaitKind {
  std::string label;
  bool grant = false;
  std::function<redisync::BasicLock(redisync::Client&, const std::string&)> make;
  // True once the waiter with `field` (its owner field) is waiting on `name` (queued,
  // registered, or simply not done: for kinds with no trace, a fixed pause is enough).
  std::function<bool(RedisServer&, const std::string& name, const std::string& field)> waiting;
  // Nothing of the waiter `field` is left on the server.
  std::function<bool(RedisServer&, const std::string& name, const std::string& field)> clean;
};

bool zmember(RedisServer& s, const std::string& key, const std::string& field) {
  return !s.command({"ZSCORE", key, field}).is_nil();
}
bool hmember(RedisServer& s, const std::string& key, const std::string& field) {
  return s.command({"HEXISTS", key, field}).as_integer() == 1;
}
bool none(RedisServer&, const std::string&, const std::string&) { return true; }
bool after_a_moment(RedisServer&, const std::string&, const std::string&) {
  std::this_thread::sleep_for(300ms);  // spin lock: no trace of a waiter on the server
  return true;
}

std::vector<WaitKind> kinds() {
  auto plain = [](redisync::Client& c, const std::string& n) -> redisync::BasicLock {
    return c.lock(n);
  };
  auto fair = [](redisync::Client& c, const std::string& n) -> redisync::BasicLock {
    return c.fair_lock(n);
  };
  auto lock_registered = [](RedisServer& s, const std::string& n, const std::string& f) {
    return zmember(s, lock_registrations(n), f);
  };
  return {
      {"lock", false, plain,
       [](RedisServer& s, const std::string& n, const std::string&) {
         return s.command({"PUBSUB", "NUMSUB", "redisson_lock__channel:{" + n + "}"})
                    .elements[1]
                    .as_integer() == 1;
       },
       none},
      {"lock-grant", true, plain, lock_registered,
       [=](RedisServer& s, const std::string& n, const std::string& f) {
         return !lock_registered(s, n, f);
       }},
      {"fenced-grant", true,
       [](redisync::Client& c, const std::string& n) -> redisync::BasicLock {
         return c.fenced_lock(n);
       },
       lock_registered,
       [=](RedisServer& s, const std::string& n, const std::string& f) {
         return !lock_registered(s, n, f);
       }},
      {"fair", false, fair, in_fair_queue, fair_waiter_gone},
      {"fair-grant", true, fair,
       [](RedisServer& s, const std::string& n, const std::string& f) {
         return hmember(s, fair_registrations(n), f);
       },
       fair_waiter_gone},
      {"rw-write-grant", true,
       [](redisync::Client& c, const std::string& n) -> redisync::BasicLock {
         return c.read_write_lock(n).write_lock();
       },
       [](RedisServer& s, const std::string& n, const std::string& f) {
         return zmember(s, "redisync_rwlock_grant:{" + n + "}", f);
       },
       [](RedisServer& s, const std::string& n, const std::string& f) {
         return !zmember(s, "redisync_rwlock_grant:{" + n + "}", f);
       }},
      {"spin", false,
       [](redisync::Client& c, const std::string& n) -> redisync::BasicLock {
         return c.spin_lock(n);
       },
       after_a_moment, none},
  };
}

redisync::Config config_of(RedisServer& server, const WaitKind& kind) {
  if (kind.grant) return grant_config(server);
  auto cfg = config_for(server);
  cfg.handoff = redisync::Handoff::wake;  // also under REDISYNC_TEST_HANDOFF=grant
  return cfg;
}

}  // namespace

TEST(CancelTest, ACancelledWaitEndsAtOnceAndLeavesNothingBehindForEveryKind) {
  RedisServer server;
  for (const auto& kind : kinds()) {
    SCOPED_TRACE(kind.label);
    redisync::Client holder(config_of(server, kind)), waiter(config_of(server, kind));
    const auto name = unique_name("cancel:");
    auto held = kind.make(holder, name);
    held.lock();
    auto lock = kind.make(waiter, name);
    const auto owner = redisync::Client::new_owner_id();
    const std::string field = lock.owner_field(owner);
    asio::cancellation_signal cancel;
    std::promise<AsyncOutcome> done;
    lock.async_try_lock(
        owner, 20s, 0ms,
        asio::bind_cancellation_slot(cancel.slot(), [&done](std::exception_ptr e, bool acquired) {
          done.set_value(AsyncOutcome{true, acquired, errc_of(e)});
        }));
    ASSERT_TRUE(wait_until([&] { return kind.waiting(server, name, field); }, 5s));
    cancel.emit(asio::cancellation_type::terminal);
    auto result = done.get_future();
    ASSERT_EQ(result.wait_for(5s), std::future_status::ready) << "the cancelled wait went on";
    const AsyncOutcome out = result.get();
    EXPECT_FALSE(out.acquired);
    EXPECT_EQ(out.error, "cancelled");
    // The give-up step is sent before the completion runs (FairLock waits for its answer;
    // the grant kinds' step follows on the same connection): gone at once or very soon.
    EXPECT_TRUE(wait_until([&] { return kind.clean(server, name, field); }, 2s))
        << "the cancelled waiter left a trace";
    EXPECT_EQ(server.command({"HEXISTS", name, field}).as_integer(), 0);
    // The holder's release goes to nobody: the lock is free at once.
    held.unlock();
    EXPECT_TRUE(wait_until([&] { return server.command({"EXISTS", name}).as_integer() == 0; }, 2s))
        << server.command({"HGETALL", name}).debug_string();
  }
}

TEST(CancelTest, TheAwaitableOrOperatorCancelsTheLosingWait) {
  using namespace asio::experimental::awaitable_operators;
  RedisServer server;
  for (const bool grant : {false, true}) {
    SCOPED_TRACE(grant ? "grant" : "wake");
    auto cfg = grant ? grant_config(server) : config_for(server);
    if (!grant) cfg.handoff = redisync::Handoff::wake;
    redisync::Client holder(cfg), waiter(cfg);
    const auto name = unique_name("cancel-or:");
    auto held = holder.fair_lock(name);
    held.lock();
    auto lock = waiter.fair_lock(name);
    const auto owner = redisync::Client::new_owner_id();
    asio::io_context io;
    std::atomic<int> winner{-1};
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          asio::steady_timer timer(io, 300ms);
          auto r = co_await (lock.async_lock(owner, asio::use_awaitable) ||
                             timer.async_wait(asio::use_awaitable));
          winner = static_cast<int>(r.index());
        },
        asio::detached);
    std::thread runner([&] { io.run_for(10s); });
    runner.join();
    EXPECT_EQ(winner.load(), 1) << "the timer should have won";
    const std::string field = lock.owner_field(owner);
    EXPECT_FALSE(in_fair_queue(server, name, field)) << "the cancelled waiter is still queued";
    EXPECT_FALSE(hmember(server, fair_registrations(name), field));
    held.unlock();
    EXPECT_TRUE(wait_until([&] { return server.command({"EXISTS", name}).as_integer() == 0; }, 2s))
        << "granted to or kept for the cancelled waiter: "
        << server.command({"HGETALL", name}).debug_string();
  }
}

TEST(CancelTest, ACancellationAfterTheLockWasAcquiredChangesNothing) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto lock = client.lock(unique_name("cancel-late:"));
  const auto owner = redisync::Client::new_owner_id();
  asio::cancellation_signal cancel;
  std::promise<AsyncOutcome> done;
  lock.async_try_lock(
      owner, 5s, 0ms,
      asio::bind_cancellation_slot(cancel.slot(), [&done](std::exception_ptr e, bool acquired) {
        done.set_value(AsyncOutcome{true, acquired, errc_of(e)});
      }));
  auto result = done.get_future();
  ASSERT_EQ(result.wait_for(5s), std::future_status::ready);
  const AsyncOutcome out = result.get();
  ASSERT_TRUE(out.acquired);
  cancel.emit(asio::cancellation_type::terminal);  // too late: nothing happens
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(lock.is_held_by_thread(owner));
  std::promise<std::exception_ptr> released;
  lock.async_unlock(owner, [&](std::exception_ptr e) { released.set_value(e); });
  EXPECT_EQ(released.get_future().get(), nullptr);
}

TEST(CancelTest, ACancellationRacingAGrantNeverLeavesTheLockHeldByNobody) {
  // Rounds in which the waiter's wait is cancelled about when the holder's release grants it
  // the lock. Whichever comes first, the waiter either says it acquired (and then releases)
  // or that it was cancelled; the lock is then free well within the 5 s grant lease.
  RedisServer server;
  for (const bool fair : {false, true}) {
    SCOPED_TRACE(fair ? "fair" : "lock");
    redisync::Client holder(grant_config(server, 5000ms)), waiter(grant_config(server, 5000ms));
    const auto name = unique_name("cancel-race:");
    auto make = [&](redisync::Client& c) -> redisync::BasicLock {
      if (fair) return c.fair_lock(name);
      return c.lock(name);
    };
    auto held = make(holder);
    auto lock = make(waiter);
    int acquired = 0, cancelled = 0;
    const auto holder_owner = redisync::Client::new_owner_id();
    for (int round = 0; round < load_count(30); ++round) {
      std::promise<bool> holding;
      held.async_try_lock(holder_owner, 10s, 0ms, [&](std::exception_ptr e, bool got) {
        holding.set_value(!e && got);
      });
      ASSERT_TRUE(holding.get_future().get()) << "round " << round;
      const auto owner = redisync::Client::new_owner_id();
      const std::string field = lock.owner_field(owner);
      asio::cancellation_signal cancel;
      auto done = std::make_shared<std::promise<AsyncOutcome>>();
      lock.async_try_lock(
          owner, 20s, 0ms,
          asio::bind_cancellation_slot(cancel.slot(), [done](std::exception_ptr e, bool got) {
            done->set_value(AsyncOutcome{true, got, errc_of(e)});
          }));
      const std::string registrations = fair ? fair_registrations(name) : lock_registrations(name);
      ASSERT_TRUE(wait_until(
          [&] {
            return fair ? hmember(server, registrations, field)
                        : zmember(server, registrations, field);
          },
          5s));
      // The release goes out now; the cancellation 0-950 us later.
      held.async_unlock(holder_owner, [](std::exception_ptr) {});
      std::this_thread::sleep_for(std::chrono::microseconds(50 * (round % 20)));
      cancel.emit(asio::cancellation_type::terminal);
      auto result = done->get_future();
      ASSERT_EQ(result.wait_for(10s), std::future_status::ready) << "round " << round;
      const AsyncOutcome out = result.get();
      if (out.acquired) {
        ++acquired;
        std::promise<std::exception_ptr> released;
        lock.async_unlock(owner, [&](std::exception_ptr e) { released.set_value(e); });
        EXPECT_EQ(released.get_future().get(), nullptr) << "round " << round;
      } else {
        ++cancelled;
        EXPECT_EQ(out.error, "cancelled") << "round " << round;
      }
      ASSERT_TRUE(
          wait_until([&] { return server.command({"EXISTS", name}).as_integer() == 0; }, 1500ms))
          << "round " << round << ": the lock stayed held by "
          << server.command({"HGETALL", name}).debug_string();
    }
    std::cout << "[ info ] acquired " << acquired << ", cancelled " << cancelled << "\n";
  }
}
