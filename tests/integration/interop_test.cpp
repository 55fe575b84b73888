// SPDX-License-Identifier: Apache-2.0
// Interoperability of redisync::Lock (Redisson RLock, wire spec §2) with a Redisson-layout
// client on the same server: the "Java side" is tests/support/java_layout.h, written from the
// spec, acting over a separate connection. Both directions: exclusion, and each side's release
// waking the other's waiter with the message it listens for.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "interop_util.h"

namespace redisync::test::interop {
namespace {

using J = JavaLayoutClient;

TEST(InteropTest, JavaHolderExcludesUsAndItsReleaseWakesOurWaiter) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("shared:");
  ASSERT_TRUE(java.lock_acquire(name, kJavaLeaseMs, kJavaThread).is_nil());  // Java holds it

  auto lock = client.lock(name);
  EXPECT_FALSE(lock.try_lock());
  EXPECT_TRUE(lock.is_locked());
  EXPECT_FALSE(lock.is_held_by_current_thread());
  EXPECT_THROW(lock.unlock_checked(), redisync::NotOwnerError);

  auto waiter = blocking_waiter(lock);
  expect_java_release_wakes(server, java, name, waiter);
}

TEST(InteropTest, OurHolderExcludesJavaAndOurReleaseIsWhatJavaListensFor) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("shared:");
  auto lock = client.lock(name);
  lock.lock();

  // Java sees it held (PTTL reply) and our field layout is Redisson's.
  auto attempt = java.lock_acquire(name, 30000, kJavaThread);
  ASSERT_FALSE(attempt.is_nil());
  EXPECT_GT(attempt.as_integer(), 0);
  auto fields = server.command({"HGETALL", name});
  ASSERT_EQ(fields.elements.size(), 2u);
  EXPECT_EQ(fields.elements[0].as_string(),
            client.id() + ":" + std::to_string(redisync::Client::current_thread_id()));
  EXPECT_EQ(fields.elements[1].as_string(), "1");
  EXPECT_EQ(client.id().size(), 36u);
  // Java cannot release what it does not hold, and trying changes nothing.
  EXPECT_TRUE(java.lock_release(name, kJavaThread, 30000).is_nil());
  EXPECT_TRUE(lock.is_held_by_current_thread());

  // A Java waiter listens on the two-underscore channel with the braced name.
  ChannelListener java_waiter(server, J::lock_channel(name));
  lock.unlock();
  EXPECT_EQ(java_waiter.next_message(5s), "0");                       // Redisson's unlock message
  EXPECT_TRUE(java.lock_acquire(name, 30000, kJavaThread).is_nil());  // now Java gets it
}

TEST(InteropTest, BracedNamesKeepRedissonsTagRule) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const std::string name = "{user:7}:profile";
  // A name that already contains '{' is used unchanged in derived keys (wire spec §1.1).
  ASSERT_EQ(J::lock_channel(name), "redisson_lock__channel:{user:7}:profile");
  ASSERT_TRUE(java.lock_acquire(name, kJavaLeaseMs, kJavaThread).is_nil());
  auto lock = client.lock(name);
  auto waiter = blocking_waiter(lock);
  expect_java_release_wakes(server, java, name, waiter);
}

TEST(InteropTest, JavaReentryAndOurReentryCountTheSameField) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("shared:");
  ASSERT_TRUE(java.lock_acquire(name, kJavaLeaseMs, kJavaThread).is_nil());
  ASSERT_TRUE(java.lock_acquire(name, kJavaLeaseMs, kJavaThread).is_nil());  // re-entry
  EXPECT_EQ(server.command({"HGET", name, java.owner(kJavaThread)}).as_string(), "2");
  auto lock = client.lock(name);
  EXPECT_FALSE(lock.try_lock());
  // One release leaves Java holding (reply 0, no message); the second frees it.
  ChannelListener listener(server, J::lock_channel(name));
  EXPECT_EQ(java.lock_release(name, kJavaThread, kJavaLeaseMs).as_integer(), 0);
  EXPECT_FALSE(lock.try_lock());
  EXPECT_EQ(java.lock_release(name, kJavaThread, kJavaLeaseMs).as_integer(), 1);
  EXPECT_EQ(listener.next_message(5s), "0");
  EXPECT_TRUE(lock.try_lock());
  lock.unlock();
}

}  // namespace
}  // namespace redisync::test::interop
