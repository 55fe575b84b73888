// SPDX-License-Identifier: Apache-2.0
// sync::BlockingResult and copy_for_caller: the caller of a blocking call gets the value, or
// an error of the same type and content in an exception object of its own.
#include "sync/acquire/blocking_result.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <thread>

#include "redisync/errors.h"
#include "redisync/multi_lock.h"

namespace redisync::sync {
namespace {

template <class E>
const E* caught_as(const std::exception_ptr& p) {
  try {
    std::rethrow_exception(p);
  } catch (const E& e) {
    return &e;
  } catch (...) {
  }
  return nullptr;
}

TEST(CopyForCaller, SameTypeAndContentInAnotherObject) {
  const auto original = std::make_exception_ptr(ServerError("acquiring lock 'x'", "WRONGTYPE"));
  const auto copy = copy_for_caller(original);
  ASSERT_NE(copy, original);
  const auto* a = caught_as<ServerError>(original);
  const auto* b = caught_as<ServerError>(copy);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_STREQ(b->what(), "acquiring lock 'x'");
  EXPECT_EQ(b->reply(), "WRONGTYPE");
  EXPECT_EQ(b->value(), errc::server_error);
}

TEST(CopyForCaller, KeepsTheMostDerivedType) {
  // AuthError is a ConnectionError: the copy must still be an AuthError, not a sliced base.
  const auto copy = copy_for_caller(std::make_exception_ptr(AuthError("refused")));
  EXPECT_NE(caught_as<AuthError>(copy), nullptr);
  const auto lost = copy_for_caller(std::make_exception_ptr(LockLostError("gone")));
  EXPECT_NE(caught_as<LockLostError>(lost), nullptr);
  const auto closed = copy_for_caller(std::make_exception_ptr(ConnectionError("x", errc::connection_failed, true)));
  ASSERT_NE(caught_as<ConnectionError>(closed), nullptr);
  EXPECT_TRUE(caught_as<ConnectionError>(closed)->maybe_sent());
}

TEST(CopyForCaller, OtherTypesAndNullPassThrough) {
  const auto foreign = std::make_exception_ptr(std::runtime_error("not ours"));
  EXPECT_EQ(copy_for_caller(foreign), foreign);
  const auto number = std::make_exception_ptr(42);
  EXPECT_EQ(copy_for_caller(number), number);
  EXPECT_EQ(copy_for_caller(nullptr), nullptr);
}

TEST(BlockingResult, ValueFromAnotherThread) {
  BlockingResult<std::string> result;
  std::thread io([&] { result.complete(nullptr, "done"); });
  EXPECT_EQ(result.take(), "done");
  io.join();
}

TEST(BlockingResult, ErrorIsRethrownAndTheFirstOutcomeWins) {
  BlockingResult<int> result;
  std::thread io([&] {
    result.fail(std::make_exception_ptr(TimeoutError("no reply")));
    result.succeed(7);  // ignored: completed already
  });
  EXPECT_THROW(
      {
        try {
          (void)result.take();
        } catch (const TimeoutError& e) {
          EXPECT_STREQ(e.what(), "no reply");
          throw;
        }
      },
      TimeoutError);
  io.join();
}

}  // namespace
}  // namespace redisync::sync
