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

}  // namespace redisync::test::interop
