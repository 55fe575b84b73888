// SPDX-License-Identifier: Apache-2.0
// A waiter whose subscription fails polls instead of giving up (AcquireFsm: a subscription
// failure leads to polling). Before, a user allowed to PUBLISH but not to SUBSCRIBE got the
// NOPERM error of its subscription from lock() although the lock was about to be free.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::unique_name;

namespace {

// A user with every right but SUBSCRIBE/SSUBSCRIBE: its releases publish, its waits cannot
// hear them.
redisync::Config deaf_user(RedisServer& server) {
  auto cfg = redisync::Config::from_url(
      server.add_user("deaf", {"~*", "&*", "+@all", "-subscribe", "-ssubscribe", "-psubscribe"}));
  cfg.timeout = 1000ms;
  return cfg;
}

}  // namespace

// Holder and waiter handles of one kind on the two clients; the holder takes it for 60 s, so
// only its release can free it within the waiter's wait.
template <class Make>
void waiter_gets_the_freed_lock(Make make) {
  auto held = make(true);
  held.lock(60s);
  auto waiting = std::async(std::launch::async, [&] {
    auto lock = make(false);
    const bool got = lock.try_lock_for(20s);
    if (got) lock.unlock();
    return got;
  });
  std::this_thread::sleep_for(300ms);  // the waiter has tried, failed to subscribe, polls
  held.unlock();
  ASSERT_EQ(waiting.wait_for(15s), std::future_status::ready)
      << "the waiter did not notice the free lock";
  EXPECT_TRUE(waiting.get());
}

TEST(SubscriptionFallback, WaiterThatCannotSubscribePollsAndGetsTheFreedLock) {
  RedisServer server;
  redisync::Client holder_client(redisync::test::config_for(server));
  redisync::Client waiter_client(deaf_user(server));
  const auto name = unique_name("deaf:");
  const auto fair_name = unique_name("deaf-fair:");
  {
    SCOPED_TRACE("lock");
    waiter_gets_the_freed_lock(
        [&](bool holder) { return (holder ? holder_client : waiter_client).lock(name); });
  }
  {
    SCOPED_TRACE("fair lock");
    waiter_gets_the_freed_lock([&](bool holder) {
      return (holder ? holder_client : waiter_client).fair_lock(fair_name);
    });
  }
}
