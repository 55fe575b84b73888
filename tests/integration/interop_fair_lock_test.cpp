// SPDX-License-Identifier: Apache-2.0
// Interoperability of FairLock (wire spec §4) and NonReentrantFairLock (§12) with a
// Redisson-layout client (tests/support/java_layout.h): exclusion both ways, one FIFO queue for
// both sides, and each release waking the queue head on that head's own channel.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "interop_util.h"

namespace redisync::test::interop {
namespace {

using J = JavaLayoutClient;

/// The queue's `index`-th owner field once the queue has `length` entries (within 5 s).
std::string queued(RedisServer& server, const std::string& name, long long length,
                   long long index) {
  const bool ok = wait_until(
      [&] {
        return server.command({"LLEN", J::fair_queue(name)}).as_integer() == length;
      },
      5s);
  if (!ok) return {};
  auto r = server.command({"LINDEX", J::fair_queue(name), std::to_string(index)});
  return r.is_nil() ? std::string{} : r.as_string();
}

// (a) for both fair kinds: Java holds; we fail at once; our queued waiter is woken by Java's
// release on its own channel.
template <class L>
void java_holder_wakes_our_head(RedisServer& server, J& java, L lock, bool non_reentrant) {
  const std::string& name = lock.name();
  ASSERT_TRUE(java.fair_acquire(name, kJavaLeaseMs, kJavaThread, /*queue=*/false,
                                J::kDefaultAllowance, non_reentrant)
                  .is_nil());
  EXPECT_FALSE(lock.try_lock());
  EXPECT_EQ(server.command({"LLEN", J::fair_queue(name)}).as_integer(), 0);  // no queueing

  auto waiter = blocking_waiter(lock);
  const std::string ours = queued(server, name, 1, 0);
  ASSERT_FALSE(ours.empty());
  EXPECT_FALSE(server.command({"ZSCORE", J::fair_timeouts(name), ours}).is_nil());
  ASSERT_TRUE(subscribed(server, J::fair_channel(name, ours)));  // its own channel (§4.8)
  ChannelListener witness(server, J::fair_channel(name, ours));
  EXPECT_EQ(java.fair_release(name, kJavaThread, kJavaLeaseMs).as_integer(), 1);
  EXPECT_EQ(witness.next_message(5s), "0");
  ASSERT_TRUE(woken(waiter));
  EXPECT_TRUE(waiter.get());
}

// (b) for both fair kinds: we hold; Java fails; a queued Java waiter is told on its channel.
template <class L>
void our_holder_wakes_java_head(RedisServer& server, J& java, L lock, bool non_reentrant) {
  const std::string& name = lock.name();
  lock.lock();
  EXPECT_EQ(java.fair_acquire(name, 30000, kJavaThread, /*queue=*/false, J::kDefaultAllowance,
                              non_reentrant)
                .as_integer(),
            1);
  auto queued_reply = java.fair_acquire(name, 30000, kJavaThread, /*queue=*/true,
                                        J::kDefaultAllowance, non_reentrant);
  ASSERT_FALSE(queued_reply.is_nil());
  EXPECT_GT(queued_reply.as_integer(), 0);  // wait at most our remaining lease
  EXPECT_EQ(queued(server, name, 1, 0), java.owner(kJavaThread));

  ChannelListener java_waiter(server, J::fair_channel(name, java.owner(kJavaThread)));
  lock.unlock();
  EXPECT_EQ(java_waiter.next_message(5s), "0");
  EXPECT_TRUE(java.fair_acquire(name, 30000, kJavaThread, true, J::kDefaultAllowance, non_reentrant)
                  .is_nil());
  EXPECT_EQ(server.command({"LLEN", J::fair_queue(name)}).as_integer(), 0);
  EXPECT_EQ(server.command({"ZCARD", J::fair_timeouts(name)}).as_integer(), 0);
}

TEST(InteropFairLockTest, JavaHolderExcludesUsAndItsReleaseWakesOurHead) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  java_holder_wakes_our_head(server, java, client.fair_lock(unique_name("fair:")), false);
}

TEST(InteropFairLockTest, OurHolderExcludesJavaAndOurReleaseWakesTheJavaHead) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  our_holder_wakes_java_head(server, java, client.fair_lock(unique_name("fair:")), false);
}

TEST(InteropFairLockTest, JavaWaiterQueuedAheadOfOursKeepsItsTurn) {
  RedisServer server;
  redisync::Client holder(config_for(server)), waiters(config_for(server));
  J java(server);
  const auto name = unique_name("fair:");
  auto held = holder.fair_lock(name);
  held.lock();
  // Java queues first, then our waiter behind it.
  auto first = java.fair_acquire(name, kJavaLeaseMs, kJavaThread, /*queue=*/true);
  ASSERT_FALSE(first.is_nil());
  auto ours_waiting = blocking_waiter(waiters.fair_lock(name));
  const std::string ours = queued(server, name, 2, 1);
  ASSERT_FALSE(ours.empty());
  EXPECT_EQ(queued(server, name, 2, 0), java.owner(kJavaThread));
  ASSERT_TRUE(subscribed(server, J::fair_channel(name, ours)));

  // Our release tells the Java head, on the Java head's channel, and nobody else.
  ChannelListener java_waiter(server, J::fair_channel(name, java.owner(kJavaThread)));
  ChannelListener our_channel(server, J::fair_channel(name, ours));
  held.unlock();
  EXPECT_EQ(java_waiter.next_message(5s), "0");
  // The lock is free, but our waiter (re-polling) must leave it to the Java head.
  EXPECT_EQ(ours_waiting.wait_for(500ms), std::future_status::timeout);
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
  ASSERT_TRUE(java.fair_acquire(name, kJavaLeaseMs, kJavaThread, true).is_nil());
  EXPECT_EQ(queued(server, name, 1, 0), ours);

  // Java's release wakes our waiter, now the head, on its channel.
  EXPECT_EQ(java.fair_release(name, kJavaThread, kJavaLeaseMs).as_integer(), 1);
  EXPECT_EQ(our_channel.next_message(5s), "0");
  ASSERT_TRUE(woken(ours_waiting));
  EXPECT_TRUE(ours_waiting.get());
}

TEST(InteropFairLockTest, JavaWaiterThatGivesUpLeavesOursTheHead) {
  RedisServer server;
  redisync::Client holder(config_for(server)), waiters(config_for(server));
  J java(server);
  const auto name = unique_name("fair:");
  auto held = holder.fair_lock(name);
  held.lock();
  ASSERT_FALSE(java.fair_acquire(name, kJavaLeaseMs, kJavaThread, /*queue=*/true).is_nil());
  auto ours_waiting = blocking_waiter(waiters.fair_lock(name));
  const std::string ours = queued(server, name, 2, 1);
  ASSERT_FALSE(ours.empty());
  java.fair_give_up(name, kJavaThread);  // §4.5
  EXPECT_EQ(queued(server, name, 1, 0), ours);
  ASSERT_TRUE(subscribed(server, J::fair_channel(name, ours)));
  held.unlock();  // wakes our waiter, the head now
  ASSERT_TRUE(woken(ours_waiting));
  EXPECT_TRUE(ours_waiting.get());
}

TEST(InteropNonReentrantFairLockTest, JavaHolderExcludesUsAndItsReleaseWakesOurHead) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("nrfair:");
  java_holder_wakes_our_head(server, java, client.non_reentrant_fair_lock(name), true);
}

TEST(InteropNonReentrantFairLockTest, OurHolderExcludesJavaAndOurReleaseWakesTheJavaHead) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("nrfair:");
  our_holder_wakes_java_head(server, java, client.non_reentrant_fair_lock(name), true);
  // Java's own re-entry is refused (§12), whatever side took the hold before.
  auto again = java.fair_acquire(name, 30000, kJavaThread, true, J::kDefaultAllowance, true);
  ASSERT_TRUE(again.is_error());
  EXPECT_NE(again.str.find("NON_REENTRANT_REACQUIRE"), std::string::npos);
}

}  // namespace
}  // namespace redisync::test::interop
