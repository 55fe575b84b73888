// SPDX-License-Identifier: Apache-2.0
// Interoperability of Semaphore (wire spec §7), PermitExpirableSemaphore (§8) and
// CountDownLatch (§9) with a Redisson-layout client (tests/support/java_layout.h): each side's
// release / count-down publishes what the other side's waiter listens for.
#include <gtest/gtest.h>

#include <future>
#include <optional>
#include <thread>

#include "interop_util.h"

namespace redisync::test::interop {
namespace {

using J = JavaLayoutClient;

// "0a1b..." (32 hex chars, as users see permit ids) -> the 16 raw bytes stored (§1.3).
std::string raw_id(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

TEST(InteropSemaphoreTest, JavaHolderExcludesUsAndItsReleaseWakesOurWaiter) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("sem:");
  ASSERT_EQ(java.semaphore_try_set_permits(name, 1).as_integer(), 1);
  ASSERT_EQ(java.semaphore_try_acquire(name, 1).as_integer(), 1);  // Java holds the only one
  auto sem = client.semaphore(name);
  EXPECT_EQ(sem.available_permits(), 0);
  EXPECT_FALSE(sem.try_acquire());

  auto waiter = std::async(std::launch::async, [&] {
    const bool got = sem.try_acquire_for(kOurWait);
    if (got) sem.release();
    return got;
  });
  ASSERT_TRUE(subscribed(server, J::semaphore_channel(name)));
  ChannelListener witness(server, J::semaphore_channel(name));
  java.semaphore_release(name, 1);
  EXPECT_EQ(witness.next_message(5s), "1");  // the new count
  ASSERT_TRUE(woken(waiter));  // no TTL bounds a semaphore wait: only the message wakes it
  EXPECT_TRUE(waiter.get());
}

TEST(InteropSemaphoreTest, OurHolderExcludesJavaAndOurReleaseIsWhatJavaListensFor) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("sem:");
  auto sem = client.semaphore(name);
  {
    ChannelListener java_waiter(server, J::semaphore_channel(name));
    ASSERT_TRUE(sem.try_set_permits(1));
    EXPECT_EQ(java_waiter.next_message(5s), "1");
  }
  ASSERT_TRUE(sem.try_acquire());
  EXPECT_EQ(java.semaphore_try_acquire(name, 1).as_integer(), 0);
  ChannelListener java_waiter(server, J::semaphore_channel(name));
  sem.release();
  EXPECT_EQ(java_waiter.next_message(5s), "1");
  EXPECT_EQ(java.semaphore_try_acquire(name, 1).as_integer(), 1);
}

TEST(InteropPermitExpirableSemaphoreTest, JavaHolderExcludesUsAndItsReleaseWakesOurWaiter) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("pes:");
  ASSERT_EQ(java.permit_try_set_permits(name, 1).as_integer(), 1);
  const std::string java_id = J::new_permit_id();
  ASSERT_EQ(java.permit_acquire(name, java_id, kJavaLeaseMs).as_string(), "OK");
  auto sem = client.permit_expirable_semaphore(name);
  EXPECT_EQ(sem.available_permits(), 0);
  EXPECT_EQ(sem.try_acquire(), std::nullopt);

  auto waiter = std::async(std::launch::async, [&] {
    auto id = sem.try_acquire_for(Duration{kOurWait});
    if (id) sem.release(*id);
    return id.has_value();
  });
  ASSERT_TRUE(subscribed(server, J::semaphore_channel(name)));
  ChannelListener witness(server, J::semaphore_channel(name));
  EXPECT_EQ(java.permit_release(name, java_id).as_integer(), 1);
  EXPECT_EQ(witness.next_message(5s), "1");
  ASSERT_TRUE(woken(waiter));  // before the Java permit's 60 s lease ran out
  EXPECT_TRUE(waiter.get());
}

TEST(InteropPermitExpirableSemaphoreTest, OurHolderExcludesJavaAndOurReleaseIsWhatJavaHears) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("pes:");
  auto sem = client.permit_expirable_semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(1));
  const std::string ours = sem.acquire(Duration{30000});
  ASSERT_EQ(ours.size(), 32u);
  // Stored as 16 raw bytes with an epoch-ms deadline about 30 s ahead.
  auto score = server.command({"ZSCORE", J::permit_timeouts(name), raw_id(ours)});
  ASSERT_FALSE(score.is_nil());
  EXPECT_NEAR(std::stod(score.as_string()), static_cast<double>(epoch_ms_now() + 30000), 10000.0);

  // Java is refused and told when our permit expires at the latest (":<score>").
  auto refused = java.permit_acquire(name, J::new_permit_id(), 30000);
  ASSERT_FALSE(refused.is_error());
  ASSERT_FALSE(refused.is_nil());
  EXPECT_EQ(refused.as_string(), ":" + score.as_string());

  ChannelListener java_waiter(server, J::semaphore_channel(name));
  sem.release(ours);
  EXPECT_EQ(java_waiter.next_message(5s), "1");
  EXPECT_EQ(java.permit_acquire(name, J::new_permit_id(), 30000).as_string(), "OK");
}

TEST(InteropCountDownLatchTest, OurCountDownToZeroIsWhatJavaAwaitListensFor) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const std::string name = "{team}:" + unique_name("latch:");  // braces are added anyway (§9)
  ASSERT_EQ(J::latch_channel(name), "redisson_countdownlatch__channel__{" + name + "}");
  auto latch = client.count_down_latch(name);
  ChannelListener java_await(server, J::latch_channel(name));
  ASSERT_TRUE(latch.try_set_count(2));
  EXPECT_EQ(java_await.next_message(5s), "1");                   // a new count closes the latch
  EXPECT_EQ(java.latch_try_set_count(name, 5).as_integer(), 0);  // ours stands
  EXPECT_EQ(server.command({"GET", name}).as_string(), "2");
  latch.count_down();
  EXPECT_EQ(java_await.next_message(200ms), std::nullopt);  // 1 left: nothing to hear yet
  latch.count_down();
  EXPECT_EQ(java_await.next_message(5s), "0");  // open
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
}

TEST(InteropCountDownLatchTest, JavaCountDownWakesOurAwait) {
  RedisServer server;
  redisync::Client client(config_for(server));
  J java(server);
  const auto name = unique_name("latch:");
  ASSERT_EQ(java.latch_try_set_count(name, 2).as_integer(), 1);
  auto latch = client.count_down_latch(name);
  EXPECT_EQ(latch.count(), 2);
  EXPECT_FALSE(latch.try_set_count(3));
  auto waiter = std::async(std::launch::async, [&] { return latch.wait_for(kOurWait); });
  ASSERT_TRUE(subscribed(server, J::latch_channel(name)));
  EXPECT_EQ(java.latch_count_down(name).as_integer(), 1);
  EXPECT_EQ(waiter.wait_for(200ms), std::future_status::timeout);  // still closed
  EXPECT_EQ(java.latch_count_down(name).as_integer(), 0);
  ASSERT_TRUE(woken(waiter));  // no TTL bounds a latch wait: only the message wakes it
  EXPECT_TRUE(waiter.get());
}

}  // namespace
}  // namespace redisync::test::interop
