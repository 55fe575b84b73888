// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the interop tests (interop_*test.cpp): a redisync client for a test
// server, a Java-layout client (tests/support/java_layout.h), and the bounds they assert.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>

#include "redisync/redisync.h"
#include "support/java_layout.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

namespace redisync::test::interop {

using namespace std::chrono_literals;

/// A Java hold's lease: only a wake-up (or a re-poll) can free our waiter before it ends.
constexpr long long kJavaLeaseMs = 60000;
/// Our waiter must be done well before the Java lease could have expired.
constexpr auto kWokenWithin = 10s;
/// How long our waiters are willing to wait (longer than kWokenWithin, shorter than the lease).
constexpr auto kOurWait = 20s;
/// A Java thread id (§1.2: any decimal 64-bit number unique within its client id).
constexpr long long kJavaThread = 57;

/// True once `n` connections are subscribed to `channel` (SUBSCRIBE flavour), within 5 s.
inline bool subscribed(RedisServer& server, const std::string& channel, long long n = 1) {
  return wait_until(
      [&] {
        auto r = server.command({"PUBSUB", "NUMSUB", channel});
        return r.elements.size() == 2 && r.elements[1].as_integer() == n;
      },
      5s);
}

/// True once `fut` is ready within kWokenWithin.
template <class T>
bool woken(std::future<T>& fut) {
  return fut.wait_for(kWokenWithin) == std::future_status::ready;
}

/// Our waiter, on another thread: `lock.try_lock_for(kOurWait)` on a copy of the handle,
/// unlocked again at once when it succeeds. The future says whether it got the lock.
template <class L>
std::future<bool> blocking_waiter(L lock) {
  return std::async(std::launch::async, [lock]() mutable {
    const bool got = lock.try_lock_for(kOurWait);
    if (got) lock.unlock();
    return got;
  });
}

/// Java holds `name` (a lock with Redisson's lock channel) and `waiter` waits for it: once the
/// waiter has subscribed, Java's release must wake it by its message, well before its wait ends.
inline void expect_java_release_wakes(RedisServer& server, JavaLayoutClient& java,
                                      const std::string& name, std::future<bool>& waiter) {
  ASSERT_TRUE(subscribed(server, JavaLayoutClient::lock_channel(name)));  // where Java publishes
  EXPECT_EQ(java.lock_release(name, kJavaThread, kJavaLeaseMs).as_integer(), 1);
  ASSERT_TRUE(woken(waiter));  // woken by the message, not after 60 s
  EXPECT_TRUE(waiter.get());
}

}  // namespace redisync::test::interop
