// SPDX-License-Identifier: Apache-2.0
// Interoperability of ReadWriteLock (wire spec §5) with a Redisson-layout client
// (tests/support/java_layout.h): Java writer vs our reader, Java reader vs our writer, and the
// reverse; readers of both sides share the lock and keep each other's per-hold markers.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "interop_util.h"

namespace redisync::test::interop {
namespace {

using J = JavaLayoutClient;

std::string our_field(const redisync::Client& client) {
  return client.id() + ":" + std::to_string(redisync::Client::current_thread_id());
}

TEST(InteropReadWriteLockTest, JavaWriterExcludesUsAndItsReleaseWakesOurReader) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("rw:");
  ASSERT_TRUE(java.write_acquire(name, kJavaLeaseMs, kJavaThread).is_nil());
  auto rw = client.read_write_lock(name);
  EXPECT_FALSE(rw.try_lock_shared());
  EXPECT_FALSE(rw.try_lock());

  auto reader = blocking_waiter(rw.read_lock());
  ASSERT_TRUE(subscribed(server, J::rwlock_channel(name)));
  ChannelListener witness(server, J::rwlock_channel(name));
  EXPECT_EQ(java.write_release(name, kJavaThread, kJavaLeaseMs).as_integer(), 1);
  EXPECT_EQ(witness.next_message(5s), "1");  // a write release wakes everyone
  ASSERT_TRUE(woken(reader));
  EXPECT_TRUE(reader.get());
}

TEST(InteropReadWriteLockTest, JavaReaderSharesWithOurReaderExcludesOurWriterAndWakesIt) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("rw:");
  ASSERT_TRUE(java.read_acquire(name, kJavaLeaseMs, kJavaThread).is_nil());
  auto rw = client.read_write_lock(name);
  EXPECT_FALSE(rw.try_lock());
  // Our reader joins and leaves; the Java hold (kept by its markers) survives our release.
  ASSERT_TRUE(rw.try_lock_shared());
  EXPECT_EQ(server.command({"EXISTS", J::reader_marker(name, our_field(client), 1)}).as_integer(),
            1);
  rw.unlock_shared();
  EXPECT_EQ(server.command({"HEXISTS", name, java.owner(kJavaThread)}).as_integer(), 1);
  EXPECT_GT(server.command({"PTTL", name}).as_integer(), 30000);
  EXPECT_FALSE(rw.try_lock());

  auto writer = blocking_waiter(rw.write_lock());
  ASSERT_TRUE(subscribed(server, J::rwlock_channel(name)));
  ChannelListener witness(server, J::rwlock_channel(name));
  EXPECT_EQ(java.read_release(name, kJavaThread).as_integer(), 1);
  EXPECT_EQ(witness.next_message(5s), "0");
  ASSERT_TRUE(woken(writer));
  EXPECT_TRUE(writer.get());
}

TEST(InteropReadWriteLockTest, OurWriterExcludesJavaAndOurReleaseIsWhatJavaListensFor) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("rw:");
  auto rw = client.read_write_lock(name);
  rw.lock();
  EXPECT_EQ(server.command({"HGET", name, "mode"}).as_string(), "write");
  EXPECT_EQ(server.command({"HGET", name, our_field(client) + ":write"}).as_string(), "1");
  auto read_refused = java.read_acquire(name, 30000, kJavaThread);
  ASSERT_FALSE(read_refused.is_nil());
  EXPECT_GT(read_refused.as_integer(), 0);
  auto write_refused = java.write_acquire(name, 30000, kJavaThread);
  ASSERT_FALSE(write_refused.is_nil());
  EXPECT_GT(write_refused.as_integer(), 0);

  ChannelListener java_waiter(server, J::rwlock_channel(name));
  rw.unlock();
  EXPECT_EQ(java_waiter.next_message(5s), "1");
  EXPECT_TRUE(java.read_acquire(name, 30000, kJavaThread).is_nil());
}

TEST(InteropReadWriteLockTest, OurReaderKeepsItsMarkersSoJavaReleaseLeavesOurHold) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("rw:");
  auto rw = client.read_write_lock(name);
  rw.lock_shared();
  auto write_refused = java.write_acquire(name, 30000, kJavaThread);
  ASSERT_FALSE(write_refused.is_nil());
  EXPECT_GT(write_refused.as_integer(), 0);

  // A Java reader shares; its release must find our marker alive and keep the lock (reply 0).
  ASSERT_TRUE(java.read_acquire(name, 30000, kJavaThread).is_nil());
  EXPECT_EQ(java.read_release(name, kJavaThread).as_integer(), 0);
  EXPECT_TRUE(rw.read_lock().is_held_by_current_thread());
  EXPECT_GT(server.command({"PTTL", name}).as_integer(), 0);
  EXPECT_FALSE(java.write_acquire(name, 30000, kJavaThread).is_nil());

  ChannelListener java_waiter(server, J::rwlock_channel(name));
  rw.unlock_shared();
  EXPECT_EQ(java_waiter.next_message(5s), "0");
  EXPECT_TRUE(java.write_acquire(name, 30000, kJavaThread).is_nil());
}

}  // namespace
}  // namespace redisync::test::interop
