// SPDX-License-Identifier: Apache-2.0
// Per-operation cancellation of MultiLock's and RedLock's async waits (Asio cancellation slots;
// CancelledError) against real servers, one Client per server: a wait blocked on a member held
// by another owner ends at once when cancelled, and leaves nothing behind: the members it had
// already taken are free again, no fair-lock queue entry of it lingers, the held member goes to
// nobody when its holder releases it. A cancellation that comes after the acquisition changes
// nothing.
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
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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

bool holds(RedisServer& s, const std::string& name, const std::string& field) {
  return s.command({"HEXISTS", name, field}).as_integer() == 1;
}

bool key_gone(RedisServer& s, const std::string& name) {
  return wait_until([&] { return s.command({"EXISTS", name}).as_integer() == 0; }, 2s);
}

redisync::Config config_of(RedisServer& server, bool grant) {
  if (grant) return grant_config(server);
  auto cfg = config_for(server);
  cfg.handoff = redisync::Handoff::wake;  // also under REDISYNC_TEST_HANDOFF=grant
  return cfg;
}

// Starts `start(handler)`, an async try-lock form, with a handler bound to `cancel`'s slot.
template <class Start>
std::future<AsyncOutcome> try_cancellable(asio::cancellation_signal& cancel, Start start) {
  auto done = std::make_shared<std::promise<AsyncOutcome>>();
  auto future = done->get_future();
  start(asio::bind_cancellation_slot(cancel.slot(), [done](std::exception_ptr e, bool acquired) {
    done->set_value(AsyncOutcome{true, acquired, errc_of(e)});
  }));
  return future;
}

// The same for an async_lock form (completion void(std::exception_ptr)).
template <class Start>
std::future<AsyncOutcome> lock_cancellable(asio::cancellation_signal& cancel, Start start) {
  auto done = std::make_shared<std::promise<AsyncOutcome>>();
  auto future = done->get_future();
  start(asio::bind_cancellation_slot(cancel.slot(), [done](std::exception_ptr e) {
    done->set_value(AsyncOutcome{true, !e, errc_of(e)});
  }));
  return future;
}

// A MultiLock{lock a on server 1, fair lock b on server 2} whose member b another owner holds.
struct MultiSetup {
  explicit MultiSetup(bool grant)
      : holder(config_of(s2, grant)), c1(config_of(s1, grant)), c2(config_of(s2, grant)) {}

  RedisServer s1, s2;
  redisync::Client holder, c1, c2;
  const std::string a = unique_name("cancel-multi-a:");
  const std::string b = unique_name("cancel-multi-b:");
  redisync::FairLock held = holder.fair_lock(b);
  redisync::Lock member_a = c1.lock(a);
  redisync::FairLock member_b = c2.fair_lock(b);
  redisync::MultiLock multi{member_a, member_b};
  const std::int64_t owner = redisync::Client::new_owner_id();

  // The waiter holds a and is queued on b.
  bool waiting_on_b() {
    return holds(s1, a, member_a.owner_field(owner)) &&
           in_fair_queue(s2, b, member_b.owner_field(owner));
  }

  // Nothing of the waiter is left, and the members are free for another Client (b once its
  // holder releases it: it must go to nobody, not to the cancelled waiter).
  void expect_nothing_left() {
    EXPECT_TRUE(key_gone(s1, a)) << "member a still held: "
                                 << s1.command({"HGETALL", a}).debug_string();
    EXPECT_TRUE(
        wait_until([&] { return fair_waiter_gone(s2, b, member_b.owner_field(owner)); }, 2s))
        << "the cancelled waiter is still queued on member b";
    EXPECT_FALSE(holds(s2, b, member_b.owner_field(owner)));
    redisync::Client other(config_for(s1));
    auto free_a = other.lock(a);
    EXPECT_TRUE(free_a.try_lock()) << "member a is not free for another Client";
    free_a.unlock();
    held.unlock();
    EXPECT_TRUE(key_gone(s2, b)) << "member b was kept for the cancelled waiter: "
                                 << s2.command({"HGETALL", b}).debug_string();
  }
};

// Three servers; the RedLock "x" whose members on servers 2 and 3 another owner holds (no
// majority to be had). Member 3 is a fair lock, so a lingering queue entry would show.
struct RedSetup {
  RedSetup() {
    held_2.lock();
    held_3.lock();
  }

  static std::vector<std::unique_ptr<RedisServer>> start_servers() {
    std::vector<std::unique_ptr<RedisServer>> out;
    for (int i = 0; i < 3; ++i) out.push_back(std::make_unique<RedisServer>());
    return out;
  }
  std::vector<std::unique_ptr<redisync::Client>> clients_of() {
    std::vector<std::unique_ptr<redisync::Client>> out;
    for (auto& s : servers) out.push_back(std::make_unique<redisync::Client>(config_of(*s, false)));
    return out;
  }

  // Initialised in this order (the handles below use them).
  std::vector<std::unique_ptr<RedisServer>> servers = start_servers();
  std::vector<std::unique_ptr<redisync::Client>> clients = clients_of();
  std::vector<std::unique_ptr<redisync::Client>> holders = clients_of();
  const std::string x = unique_name("cancel-red:");
  redisync::Lock m1 = clients[0]->lock(x);
  redisync::Lock m2 = clients[1]->lock(x);
  redisync::FairLock m3 = clients[2]->fair_lock(x);
  redisync::Lock held_2 = holders[1]->lock(x);
  redisync::FairLock held_3 = holders[2]->fair_lock(x);
  redisync::RedLock red{m1, m2, m3};
  const std::int64_t owner = redisync::Client::new_owner_id();

  bool has_taken_member_1() { return holds(*servers[0], x, m1.owner_field(owner)); }

  void expect_nothing_left() {
    EXPECT_TRUE(key_gone(*servers[0], x))
        << "member 1 still held: " << servers[0]->command({"HGETALL", x}).debug_string();
    EXPECT_FALSE(holds(*servers[1], x, m2.owner_field(owner)));
    EXPECT_TRUE(
        wait_until([&] { return fair_waiter_gone(*servers[2], x, m3.owner_field(owner)); }, 2s))
        << "the cancelled waiter is still queued on member 3";
    redisync::Client other(config_for(*servers[0]));
    auto free_1 = other.lock(x);
    EXPECT_TRUE(free_1.try_lock()) << "member 1 is not free for another Client";
    free_1.unlock();
    held_2.unlock();
    held_3.unlock();
    EXPECT_TRUE(key_gone(*servers[1], x));
    EXPECT_TRUE(key_gone(*servers[2], x)) << "member 3 was kept for the cancelled waiter: "
                                          << servers[2]->command({"HGETALL", x}).debug_string();
  }
};

void expect_cancelled(std::future<AsyncOutcome>& result) {
  ASSERT_EQ(result.wait_for(5s), std::future_status::ready) << "the cancelled wait went on";
  const AsyncOutcome out = result.get();
  EXPECT_FALSE(out.acquired);
  EXPECT_EQ(out.error, "cancelled");
}

}  // namespace

TEST(CancelMultiTest, ACancelledMultiLockWaitEndsAtOnceAndReleasesWhatItTook) {
  for (const bool grant : {false, true}) {
    SCOPED_TRACE(grant ? "grant" : "wake");
    MultiSetup t(grant);
    t.held.lock();
    asio::cancellation_signal cancel;
    auto result = lock_cancellable(
        cancel, [&](auto handler) { t.multi.async_lock(t.owner, std::move(handler)); });
    ASSERT_TRUE(wait_until([&] { return t.waiting_on_b(); }, 5s));
    cancel.emit(asio::cancellation_type::terminal);
    ASSERT_NO_FATAL_FAILURE(expect_cancelled(result));
    t.expect_nothing_left();
  }
}

TEST(CancelMultiTest, ACancelledMultiLockTryWaitEndsAtOnceAndReleasesWhatItTook) {
  MultiSetup t(false);
  t.held.lock();
  asio::cancellation_signal cancel;
  auto result = try_cancellable(
      cancel, [&](auto handler) { t.multi.async_try_lock(t.owner, 20s, 0ms, std::move(handler)); });
  ASSERT_TRUE(wait_until([&] { return t.waiting_on_b(); }, 5s));
  cancel.emit(asio::cancellation_type::partial);
  ASSERT_NO_FATAL_FAILURE(expect_cancelled(result));
  t.expect_nothing_left();
}

TEST(CancelMultiTest, TheAwaitableOrOperatorCancelsTheLosingMultiLockWait) {
  using namespace asio::experimental::awaitable_operators;
  asio::io_context io;  // outlives the Clients: a wait that never ended completes on it
  MultiSetup t(false);
  t.held.lock();
  std::atomic<int> winner{-1};
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer timer(io, 500ms);
        auto r = co_await (t.multi.async_lock(t.owner, asio::use_awaitable) ||
                           timer.async_wait(asio::use_awaitable));
        winner = static_cast<int>(r.index());
      },
      asio::detached);
  std::thread runner([&] { io.run_for(10s); });
  runner.join();
  EXPECT_EQ(winner.load(), 1) << "the timer should have won, at once";
  t.expect_nothing_left();
}

TEST(CancelMultiTest, ACancelledRedLockWaitEndsAtOnceAndReleasesWhatItTook) {
  RedSetup t;
  asio::cancellation_signal cancel;
  auto result = lock_cancellable(
      cancel, [&](auto handler) { t.red.async_lock(t.owner, std::move(handler)); });
  // Walks go on (member 1 taken, 2 and 3 refused, 1 released, a pause, again): cancel once it
  // holds member 1, and (later) in whatever step it is in.
  ASSERT_TRUE(wait_until([&] { return t.has_taken_member_1(); }, 5s));
  cancel.emit(asio::cancellation_type::terminal);
  ASSERT_NO_FATAL_FAILURE(expect_cancelled(result));
  t.expect_nothing_left();
}

TEST(CancelMultiTest, ACancelledRedLockTryWaitEndsAtOnceAndReleasesWhatItTook) {
  // A 4 s wait: member 2 waits 1.3 s, member 3 (the fair lock) 0.9 s, then a pause and a
  // second walk. The cancellation comes in each of these (roughly: no timing is asserted).
  for (const auto delay : {0ms, 1600ms, 2600ms}) {
    SCOPED_TRACE("cancelled " + std::to_string(delay.count()) + " ms after member 1 was taken");
    RedSetup t;
    asio::cancellation_signal cancel;
    auto result = try_cancellable(
        cancel, [&](auto handler) { t.red.async_try_lock(t.owner, 4s, 0ms, std::move(handler)); });
    ASSERT_TRUE(wait_until([&] { return t.has_taken_member_1(); }, 5s));
    std::this_thread::sleep_for(delay);
    cancel.emit(asio::cancellation_type::terminal);
    ASSERT_NO_FATAL_FAILURE(expect_cancelled(result));
    t.expect_nothing_left();
  }
}

TEST(CancelMultiTest, ACancellationAfterTheMultiLockWasAcquiredChangesNothing) {
  MultiSetup t(false);
  asio::cancellation_signal cancel;
  auto result = try_cancellable(
      cancel, [&](auto handler) { t.multi.async_try_lock(t.owner, 5s, 0ms, std::move(handler)); });
  ASSERT_EQ(result.wait_for(5s), std::future_status::ready);
  const AsyncOutcome out = result.get();
  ASSERT_TRUE(out.acquired) << out.error;
  cancel.emit(asio::cancellation_type::terminal);  // too late: nothing happens
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(t.multi.is_held_by_thread(t.owner));
  EXPECT_TRUE(holds(t.s1, t.a, t.member_a.owner_field(t.owner)));
  EXPECT_TRUE(holds(t.s2, t.b, t.member_b.owner_field(t.owner)));
  auto released = t.multi.async_unlock(t.owner, asio::use_future);
  EXPECT_NO_THROW(released.get());
  EXPECT_TRUE(key_gone(t.s1, t.a));
  EXPECT_TRUE(key_gone(t.s2, t.b));
}

TEST(CancelMultiTest, ACancellationAfterTheRedLockWasAcquiredChangesNothing) {
  RedSetup t;
  t.held_2.unlock();  // a majority (members 1 and 2) can be had
  asio::cancellation_signal cancel;
  auto result = lock_cancellable(
      cancel, [&](auto handler) { t.red.async_lock(t.owner, 10s, std::move(handler)); });
  ASSERT_EQ(result.wait_for(10s), std::future_status::ready);
  const AsyncOutcome out = result.get();
  ASSERT_TRUE(out.acquired) << out.error;
  cancel.emit(asio::cancellation_type::terminal);  // too late: nothing happens
  std::this_thread::sleep_for(200ms);
  EXPECT_TRUE(t.red.is_held_by_thread(t.owner));
  EXPECT_TRUE(holds(*t.servers[0], t.x, t.m1.owner_field(t.owner)));
  EXPECT_TRUE(holds(*t.servers[1], t.x, t.m2.owner_field(t.owner)));
  auto released = t.red.async_unlock(t.owner, asio::use_future);
  EXPECT_NO_THROW(released.get());
  EXPECT_TRUE(key_gone(*t.servers[0], t.x));
  EXPECT_TRUE(key_gone(*t.servers[1], t.x));
  t.held_3.unlock();
}
