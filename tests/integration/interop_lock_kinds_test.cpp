// SPDX-License-Identifier: Apache-2.0
// Interoperability of FencedLock (wire spec §11), SpinLock (§10) and NonReentrantLock (§12)
// with a Redisson-layout client (tests/support/java_layout.h) on the same server, both ways.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "interop_util.h"

namespace redisync::test::interop {
namespace {

using J = JavaLayoutClient;

TEST(InteropFencedLockTest, JavaHolderExcludesUsAndItsReleaseWakesOurWaiter) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("fenced:");
  auto java_hold = java.fenced_acquire(name, kJavaLeaseMs, kJavaThread);
  ASSERT_EQ(java_hold.elements.size(), 2u) << java_hold.debug_string();
  EXPECT_EQ(java_hold.elements[0].as_integer(), -1);
  const long long java_token = java_hold.elements[1].as_integer();

  auto lock = client.fenced_lock(name);
  EXPECT_FALSE(lock.try_lock());
  EXPECT_EQ(lock.token(), static_cast<std::uint64_t>(java_token));
  auto waiter = std::async(std::launch::async, [&] {
    auto token = lock.try_lock_and_get_token_for(Duration{kOurWait});
    if (token) lock.unlock();
    return token;
  });
  ASSERT_TRUE(subscribed(server, J::lock_channel(name)));
  EXPECT_EQ(java.lock_release(name, kJavaThread, kJavaLeaseMs).as_integer(), 1);
  ASSERT_TRUE(woken(waiter));
  const auto ours = waiter.get();
  ASSERT_TRUE(ours.has_value());
  EXPECT_GT(*ours, static_cast<std::uint64_t>(java_token));  // one counter for both sides
}

TEST(InteropFencedLockTest, OurHolderExcludesJavaAndOurReleaseIsWhatJavaListensFor) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("fenced:");
  auto lock = client.fenced_lock(name);
  const std::uint64_t ours = lock.lock_and_get_token();

  auto refused = java.fenced_acquire(name, 30000, kJavaThread);
  ASSERT_EQ(refused.elements.size(), 2u) << refused.debug_string();
  EXPECT_GT(refused.elements[0].as_integer(), 0);  // PTTL of our hold
  EXPECT_EQ(refused.elements[1].as_integer(), -1);
  EXPECT_EQ(server.command({"GET", J::token_key(name)}).as_string(), std::to_string(ours));

  ChannelListener java_waiter(server, J::lock_channel(name));
  lock.unlock();
  EXPECT_EQ(java_waiter.next_message(5s), "0");
  auto java_hold = java.fenced_acquire(name, 30000, kJavaThread);
  ASSERT_EQ(java_hold.elements.size(), 2u) << java_hold.debug_string();
  EXPECT_EQ(java_hold.elements[0].as_integer(), -1);
  EXPECT_EQ(java_hold.elements[1].as_integer(), static_cast<long long>(ours) + 1);
}

TEST(InteropSpinLockTest, JavaHolderExcludesUsAndOurSpinnerGetsItAfterJavaReleases) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("spin:");
  ASSERT_TRUE(java.lock_acquire(name, kJavaLeaseMs, kJavaThread).is_nil());
  auto lock = client.spin_lock(name);
  EXPECT_FALSE(lock.try_lock());
  auto waiter = blocking_waiter(lock);
  // No pub/sub for the spin lock (§10): the spinner re-polls (at most 128 ms apart).
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(waiter.wait_for(0s), std::future_status::timeout);
  ChannelListener listener(server, J::lock_channel(name));
  EXPECT_EQ(java.lock_release(name, kJavaThread, kJavaLeaseMs, /*publish=*/false).as_integer(), 1);
  ASSERT_TRUE(woken(waiter));
  EXPECT_TRUE(waiter.get());
  EXPECT_EQ(listener.next_message(200ms), std::nullopt);  // our release published nothing
}

TEST(InteropSpinLockTest, OurHolderExcludesJavaAndOurReleasePublishesNothing) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("spin:");
  auto lock = client.spin_lock(name);
  lock.lock();
  auto refused = java.lock_acquire(name, 30000, kJavaThread);
  ASSERT_FALSE(refused.is_nil());
  EXPECT_GT(refused.as_integer(), 0);
  ChannelListener listener(server, J::lock_channel(name));
  lock.unlock();
  EXPECT_EQ(listener.next_message(300ms), std::nullopt);  // a Java spinner polls instead
  EXPECT_TRUE(java.lock_acquire(name, 30000, kJavaThread).is_nil());
}

TEST(InteropNonReentrantLockTest, JavaHolderExcludesUsAndItsReleaseWakesOurWaiter) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("nonreentrant:");
  ASSERT_TRUE(java.lock_acquire(name, kJavaLeaseMs, kJavaThread, /*non_reentrant=*/true).is_nil());
  auto again = java.lock_acquire(name, kJavaLeaseMs, kJavaThread, true);
  ASSERT_TRUE(again.is_error());  // Java's own re-entry is refused; its count stays 1
  EXPECT_NE(again.str.find("NON_REENTRANT_REACQUIRE"), std::string::npos);
  EXPECT_EQ(server.command({"HGET", name, java.owner(kJavaThread)}).as_string(), "1");

  auto lock = client.non_reentrant_lock(name);
  EXPECT_FALSE(lock.try_lock());
  auto waiter = blocking_waiter(lock);
  expect_java_release_wakes(server, java, name, waiter);
}

TEST(InteropNonReentrantLockTest, OurHolderExcludesJavaAndOurReleaseIsWhatJavaListensFor) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("nonreentrant:");
  auto lock = client.non_reentrant_lock(name);
  lock.lock();
  EXPECT_THROW(lock.lock(), redisync::ReentryError);
  auto refused = java.lock_acquire(name, 30000, kJavaThread, /*non_reentrant=*/true);
  ASSERT_FALSE(refused.is_nil());
  EXPECT_GT(refused.as_integer(), 0);
  ChannelListener java_waiter(server, J::lock_channel(name));
  lock.unlock();  // one unlock frees it: the count never went above 1
  EXPECT_EQ(java_waiter.next_message(5s), "0");
  EXPECT_TRUE(java.lock_acquire(name, 30000, kJavaThread, true).is_nil());
}

}  // namespace
}  // namespace redisync::test::interop
