// SPDX-License-Identifier: Apache-2.0
// Issue 22 item 7: an async completion handler that throws on the Client's I/O thread used to
// end the process (std::terminate from the I/O thread). It is now caught there, passed to the
// hook of redisync/async.h, and the Client keeps working (calls, lock acquisitions, renewals).
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <stdexcept>
#include <string>

#include "lock_kinds_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;
using namespace redisync::test::kinds;

namespace {

// Installs a hook that records what reached it; restores the default on destruction.
struct HookRecorder {
  HookRecorder() {
    redisync::set_async_handler_exception_hook([this](std::exception_ptr e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        std::lock_guard lock(mutex);
        messages.push_back(ex.what());
      }
    });
  }
  ~HookRecorder() { redisync::set_async_handler_exception_hook(nullptr); }
  std::size_t count() {
    std::lock_guard lock(mutex);
    return messages.size();
  }
  std::mutex mutex;
  std::vector<std::string> messages;
};

}  // namespace

TEST(HonestHandlersTest, ThrowingCompletionHandlerEndsTheProcess) {
  HookRecorder hook;
  RedisServer server;
  redisync::Client client(config_for(server));
  client.async_execute({"PING"}, [](std::exception_ptr, redisync::Reply) {
    throw std::runtime_error("handler boom");
  });
  ASSERT_TRUE(wait_until([&] { return hook.count() == 1; }, 5s, 10ms));
  EXPECT_EQ(hook.messages.front(), "handler boom");
  EXPECT_EQ(client.execute({"PING"}).str, "PONG");  // the I/O thread is alive
}

TEST(HonestHandlersTest, ThrowingLockHandlerKeepsTheHoldAndItsRenewals) {
  HookRecorder hook;
  RedisServer server;
  auto cfg = config_for(server);
  cfg.lock_watchdog_timeout = 900ms;
  redisync::Client client(cfg);
  auto lock = client.fair_lock(unique_name("handlers:fair:"));
  const auto owner = redisync::Client::new_owner_id();
  lock.async_lock(owner, [](std::exception_ptr) { throw std::runtime_error("lock boom"); });
  ASSERT_TRUE(wait_until([&] { return hook.count() == 1; }, 5s, 10ms));
  EXPECT_TRUE(lock.is_held_by_thread(owner));
  std::this_thread::sleep_for(1500ms);  // past the lease: the watchdog still renews it
  EXPECT_TRUE(lock.is_held_by_thread(owner));
  std::promise<std::exception_ptr> released;
  lock.async_unlock(owner, [&](std::exception_ptr e) { released.set_value(e); });
  auto f = released.get_future();
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(f.get(), nullptr);
  EXPECT_FALSE(lock.is_locked());
}
