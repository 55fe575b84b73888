// A blocking call made on the client's own I/O thread (from an async completion handler or the
// lost-lock handler) would wait for that thread, i.e. forever. It must fail at once instead.
#include <gtest/gtest.h>

#include <asio/use_future.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>

#include "integration/lock_kinds_util.h"
#include "redisync/redisync.h"
#include "support/redis_server.h"
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
