// SPDX-License-Identifier: Apache-2.0
// A blocking call made on the client's own I/O thread (from an async completion handler or the
// lost-lock handler) would wait for that thread, i.e. forever. It must fail at once instead.
#include <gtest/gtest.h>

#include <asio/use_future.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "integration/lock_kinds_util.h"
#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/server_stats.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::kinds::config_for;

namespace {

constexpr const char* kRule = "blocking call on the client's I/O thread; use the async form";

// Runs `blocking` inside a completion handler of `start` and returns what it threw (or "no
// error"). A client whose I/O thread hangs is leaked so the test still ends.
template <class Start, class Blocking>
std::string from_handler(std::unique_ptr<redisync::Client>& client, Start start,
                         Blocking blocking) {
  auto seen = std::make_shared<std::promise<std::string>>();
  start([seen, blocking](std::exception_ptr) {
    try {
      blocking();
      seen->set_value("no error");
    } catch (const std::exception& e) {
      seen->set_value(e.what());
    }
  });
  auto f = seen->get_future();
  if (f.wait_for(5s) != std::future_status::ready) {
    (void)client.release();  // its I/O thread waits for itself: leave it
    return "hung";
  }
  return f.get();
}

}  // namespace

TEST(IoThreadTest, BlockingCallInACompletionHandlerHangs) {
  RedisServer server;
  auto client = std::make_unique<redisync::Client>(config_for(server));
  auto lock = std::make_shared<redisync::Lock>(client->lock(unique_name("io:")));
  const auto owner = redisync::Client::new_owner_id();
  const std::string what = from_handler(
      client, [&](auto handler) { lock->async_lock(owner, 10s, handler); },
      [lock] { lock->try_lock(); });
  EXPECT_NE(what.find(kRule), std::string::npos) << what;
  if (what == "hung") {
    (void)new std::shared_ptr<redisync::Lock>(lock);  // its Client is leaked too
    return;
  }
  lock->async_unlock(owner, asio::use_future).get();
}

TEST(IoThreadTest, MultiLockBlockingCallInACompletionHandlerHangs) {
  RedisServer server;
  auto client = std::make_unique<redisync::Client>(config_for(server));
  auto lock = std::make_shared<redisync::Lock>(client->lock(unique_name("io:")));
  auto multi = std::make_shared<redisync::MultiLock>(
      std::vector<redisync::AnyLock>{client->lock(unique_name("io:m:"))},
      redisync::MultiLockOptions{});
  const auto owner = redisync::Client::new_owner_id();
  const std::string what = from_handler(
      client, [&](auto handler) { lock->async_lock(owner, 10s, handler); },
      [multi] { multi->try_lock(); });
  EXPECT_NE(what.find(kRule), std::string::npos) << what;
  if (what == "hung") {
    (void)new std::shared_ptr<redisync::Lock>(lock);
    (void)new std::shared_ptr<redisync::MultiLock>(multi);
    return;
  }
  lock->async_unlock(owner, asio::use_future).get();
}

// A Client destroyed inside one of its own completion handlers cannot wait for its I/O thread
// (that thread is running the handler): it must close once the handler returns, neither
// hanging nor ending the program, and handles that outlive it answer ClientClosedError.
TEST(IoThreadTest, ClientDestroyedInItsOwnCompletionHandlerClosesAfterIt) {
  RedisServer server;
  auto client = std::make_shared<std::unique_ptr<redisync::Client>>(
      std::make_unique<redisync::Client>(config_for(server)));
  auto lock = std::make_shared<redisync::Lock>((*client)->lock(unique_name("io:")));
  const auto owner = redisync::Client::new_owner_id();
  auto destroyed = std::make_shared<std::promise<void>>();
  lock->async_lock(owner, 10s, [client, destroyed](std::exception_ptr) {
    client->reset();
    destroyed->set_value();
  });
  auto f = destroyed->get_future();
  if (f.wait_for(5s) != std::future_status::ready) {
    (void)new std::shared_ptr<redisync::Lock>(lock);
    FAIL() << "destroying the Client inside its completion handler hung";
  }
  // The close runs after the handler; the handle outlives the Client and says so.
  EXPECT_THROW(
      {
        for (int i = 0; i < 200; ++i) {  // bounded: the close follows the handler at once
          (void)lock->try_lock();
          lock->unlock();
          std::this_thread::sleep_for(10ms);
        }
      },
      redisync::ClientClosedError);
}

// The same when the handler drops the last handle too: the Client's state must not be
// destroyed on the thread that is running it.
TEST(IoThreadTest, ClientAndLastHandleDestroyedInACompletionHandler) {
  RedisServer server;
  auto client = std::make_shared<std::unique_ptr<redisync::Client>>(
      std::make_unique<redisync::Client>(config_for(server)));
  auto lock = std::make_shared<std::shared_ptr<redisync::Lock>>(
      std::make_shared<redisync::Lock>((*client)->lock(unique_name("io:"))));
  const auto owner = redisync::Client::new_owner_id();
  auto destroyed = std::make_shared<std::promise<void>>();
  (*lock)->async_lock(owner, 10s, [client, lock, destroyed](std::exception_ptr) {
    client->reset();
    lock->reset();
    destroyed->set_value();
  });
  auto f = destroyed->get_future();
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready)
      << "destroying the Client inside its completion handler hung";
  // A fresh Client still reaches the server (nothing of the old one is in the way).
  redisync::Client other(config_for(server));
  EXPECT_TRUE(other.lock(unique_name("io:after:")).try_lock());
}

// A thread blocked in lock() runs its Client's loop while it waits (issue 35), so an async
// completion may run on that thread. One that destroys the Client there must neither hang nor
// crash: the blocked lock() ends with ClientClosedError, the handler's own blocking call on the
// same Client fails at once, and the close follows the handler.
TEST(IoThreadTest, ClientDestroyedInACompletionRunByABlockedCaller) {
  RedisServer server;
  redisync::Client holder(config_for(server));
  const auto held = unique_name("io:held:");
  holder.lock(held).lock(60s);
  auto client = std::make_shared<std::unique_ptr<redisync::Client>>(
      std::make_unique<redisync::Client>(config_for(server)));
  auto waiting = std::make_shared<redisync::Lock>((*client)->lock(held));
  std::promise<std::thread::id> waiter_thread;
  auto waiter = std::async(std::launch::async, [&] {
    waiter_thread.set_value(std::this_thread::get_id());
    try {
      waiting->lock();
      return std::string("acquired");
    } catch (const redisync::ClientClosedError&) {
      return std::string("closed");
    } catch (const std::exception& e) {
      return std::string("other: ") + e.what();
    }
  });
  const auto waiter_id = waiter_thread.get_future().get();
  ASSERT_TRUE(redisync::test::wait_until(
      [&] { return !redisync::test::no_channels(server); }, 3s));
  std::this_thread::sleep_for(100ms);  // far past busy_poll: the waiter runs the loop now
  auto other = std::make_shared<redisync::Lock>((*client)->lock(unique_name("io:free:")));
  auto ran_on = std::make_shared<std::promise<std::thread::id>>();
  auto nested = std::make_shared<std::string>();
  other->async_lock(redisync::Client::new_owner_id(), 10s,
                    [client, other, ran_on, nested](std::exception_ptr) {
                      try {
                        (void)other->try_lock();  // blocking, on the loop: refused at once
                        *nested = "no error";
                      } catch (const redisync::InvalidArgument& e) {
                        *nested = e.what();
                      }
                      client->reset();
                      ran_on->set_value(std::this_thread::get_id());
                    });
  auto ran = ran_on->get_future();
  ASSERT_EQ(ran.wait_for(5s), std::future_status::ready) << "the completion never ran";
  EXPECT_EQ(ran.get(), waiter_id);  // the blocked caller ran the loop, and this handler
  EXPECT_NE(nested->find(kRule), std::string::npos) << *nested;
  ASSERT_EQ(waiter.wait_for(5s), std::future_status::ready) << "the blocked lock() hung";
  EXPECT_EQ(waiter.get(), "closed");
  EXPECT_THROW((void)other->try_lock(), redisync::ClientClosedError);
  // The lock the closed Client waited for is still the holder's, and a fresh Client works.
  redisync::Client fresh(config_for(server));
  EXPECT_FALSE(fresh.lock(held).try_lock());
  EXPECT_TRUE(fresh.lock(unique_name("io:after:")).try_lock());
}
