// SPDX-License-Identifier: Apache-2.0
// Pure logic of the rate limiter (src/sync/rate_limiter/rate_limiter_plan.h): key names of docs/wire-format.md §17.1,
// input limits, the next sleep after a refusal, and how script errors become exceptions.
#include <gtest/gtest.h>

#include "redisync/errors.h"
#include "redisync/rate_limiter.h"
#include "sync/rate_limiter/rate_limiter_plan.h"

namespace redisync::sync {
namespace {

using namespace std::chrono_literals;

TEST(RateLimiterPlan, KeysFollowRedissonsSuffixRule) {
  EXPECT_EQ(rate_key("api", "value"), "{api}:value");
  EXPECT_EQ(rate_key("a{b}c", "permits"), "a{b}c:permits");
  const auto keys = rate_keys("api", "uuid");
  ASSERT_EQ(keys.size(), 5u);
  EXPECT_EQ(keys[0], "api");
  EXPECT_EQ(keys[1], "{api}:value");
  EXPECT_EQ(keys[2], "{api}:value:uuid");
  EXPECT_EQ(keys[3], "{api}:permits");
  EXPECT_EQ(keys[4], "{api}:permits:uuid");
}

TEST(RateLimiterPlan, ConfigLimits) {
  const auto max = RateLimiter::kMaxDuration;
  EXPECT_NO_THROW(check_rate_config(1, 1ms, 0ms, "x"));
  EXPECT_NO_THROW(check_rate_config(RateLimiter::kMaxRate, max, max, "x"));
  EXPECT_THROW(check_rate_config(0, 1ms, 0ms, "x"), InvalidArgument);
  EXPECT_THROW(check_rate_config(RateLimiter::kMaxRate + 1, 1ms, 0ms, "x"), InvalidArgument);
  EXPECT_THROW(check_rate_config(1, 0ms, 0ms, "x"), InvalidArgument);
  EXPECT_THROW(check_rate_config(1, max + 1ms, 0ms, "x"), InvalidArgument);
  EXPECT_THROW(check_rate_config(1, 1ms, -1ms, "x"), InvalidArgument);
  EXPECT_THROW(check_rate_config(1, 1ms, max + 1ms, "x"), InvalidArgument);
  try {
    check_rate_config(1, -5ms, 0ms, "rate limiter 'q'");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("interval of rate limiter 'q'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("-5 ms"), std::string::npos);
  }
  // Lua prints numbers with 14 significant digits: now + the largest interval stays exact.
  EXPECT_LT(1.8e12 + static_cast<double>(max.count()), 1e14);
}

TEST(RateLimiterPlan, SleepIsTheScriptsDelayBoundedByTheDeadline) {
  EXPECT_EQ(rate_sleep(250, std::nullopt), Duration{250});
  EXPECT_EQ(rate_sleep(0, std::nullopt), Duration{1});   // never a busy loop
  EXPECT_EQ(rate_sleep(-7, std::nullopt), Duration{1});
  EXPECT_EQ(rate_sleep(10'000'000'000LL, std::nullopt), Duration{3'600'000});  // capped
  EXPECT_EQ(rate_sleep(250, Duration{300}), Duration{250});
  EXPECT_EQ(rate_sleep(250, Duration{250}), Duration{250});
  EXPECT_EQ(rate_sleep(251, Duration{250}), std::nullopt);  // frees after the deadline
  EXPECT_EQ(rate_sleep(5, Duration{0}), std::nullopt);      // one attempt only
}

TEST(RateLimiterPlan, ScriptErrorsBecomeTheDocumentedExceptions) {
  Reply reply;
  reply.kind = Reply::Kind::error;
  reply.str = "RATE_LIMITER_NOT_INITIALIZED RateLimiter is not initialized";
  EXPECT_THROW(std::rethrow_exception(rate_reply_error(reply, "rate limiter 'a'", 1)),
               NotConfiguredError);
  reply.str = "RATE_LIMITER_PERMITS_EXCEED_RATE 3 Requested permits amount could not exceed";
  try {
    std::rethrow_exception(rate_reply_error(reply, "rate limiter 'a'", 5));
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("permits (5) exceed the rate (3) of rate limiter 'a'"),
              std::string::npos)
        << e.what();
  }
  reply.str = "WRONGTYPE Operation against a key holding the wrong kind of value";
  try {
    std::rethrow_exception(rate_reply_error(reply, "rate limiter 'a'", 1));
    FAIL();
  } catch (const ServerError& e) {
    EXPECT_EQ(e.reply(), reply.str);
    EXPECT_NE(std::string(e.what()).find("rate limiter 'a'"), std::string::npos);
  }
  // Any other error reply goes through the one mapping (net::server_error): NOAUTH is an
  // AuthError, a configuration problem, like for every other primitive.
  reply.str = "NOAUTH Authentication required.";
  EXPECT_THROW(std::rethrow_exception(rate_reply_error(reply, "rate limiter 'a'", 1)), AuthError);
}

// A lost reply may hide a grant: the error says so, keeping its class; others pass unchanged.
TEST(RateLimiterPlan, LostRepliesSayThePermitMayHaveBeenTaken) {
  auto what = [](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      return std::string(x.what());
    }
  };
  const auto timeout = rate_ambiguous_error(
      std::make_exception_ptr(TimeoutError("no reply in 500 ms")), "rate limiter 'a'");
  EXPECT_THROW(std::rethrow_exception(timeout), TimeoutError);
  EXPECT_NE(what(timeout).find("rate limiter 'a'"), std::string::npos) << what(timeout);
  EXPECT_NE(what(timeout).find("may have been taken"), std::string::npos) << what(timeout);
  const auto dropped = rate_ambiguous_error(
      std::make_exception_ptr(ConnectionError("reset", errc::connection_failed, true)), "x");
  try {
    std::rethrow_exception(dropped);
  } catch (const ConnectionError& e) {
    EXPECT_TRUE(e.maybe_sent());
    EXPECT_NE(std::string(e.what()).find("may have been taken"), std::string::npos);
  }
  const auto unsent = rate_ambiguous_error(
      std::make_exception_ptr(ConnectionError("refused")), "x");
  EXPECT_EQ(what(unsent), "refused");
}

// The limits are the project's one limit for what is stored in Redis (docs/safety.md).
TEST(RateLimiterPlan, DurationLimitIsTheSharedOne) {
  EXPECT_EQ(RateLimiter::kMaxDuration, max_duration);
}

}  // namespace
}  // namespace redisync::sync
