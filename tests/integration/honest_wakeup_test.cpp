// SPDX-License-Identifier: Apache-2.0
// Issue 22 item 4: waiters that were not woken although they could proceed, and a RedLock
// lease that can never give a positive validity. Each waiter's wait is long (20 s); the test
// expects it to proceed well before that (bounded at 5 s), i.e. because it was woken.
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <thread>

#include "lock_kinds_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using namespace redisync::test::kinds;

TEST(HonestWakeupTest, WriterDowngradeDoesNotWakeWaitingReaders) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const std::string name = unique_name("wake:rw:");
  auto rw = a.read_write_lock(name);
  auto other = b.read_write_lock(name);
  rw.lock();
  auto reader = std::async(std::launch::async, [&] {
    const bool got = other.try_lock_shared_for(20s);
    if (got) other.unlock_shared();
    return got;
  });
  ASSERT_EQ(reader.wait_for(500ms), std::future_status::timeout);  // it waits for the writer
  rw.lock_shared();
  rw.unlock();  // downgrade: the lock is now shared, the reader can enter
  ASSERT_EQ(reader.wait_for(5s), std::future_status::ready) << "the waiting reader was not woken";
  EXPECT_TRUE(reader.get());
  rw.unlock_shared();
}

TEST(HonestWakeupTest, ShortenedPermitLeaseDoesNotWakeWaiters) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const std::string name = unique_name("wake:pes:");
  auto mine = a.permit_expirable_semaphore(name);
  auto theirs = b.permit_expirable_semaphore(name);
  ASSERT_TRUE(mine.try_set_permits(1));
  const std::string id = mine.acquire(60s);
  auto waiter = std::async(std::launch::async, [&] { return theirs.try_acquire_for(20s, 60s); });
  ASSERT_EQ(waiter.wait_for(500ms), std::future_status::timeout);  // it waits for the permit
  ASSERT_TRUE(mine.update_lease(id, 200ms));  // the permit now ends in 200 ms
  ASSERT_EQ(waiter.wait_for(5s), std::future_status::ready)
      << "the waiter slept past the shortened permit's expiry";
  auto got = waiter.get();
  ASSERT_TRUE(got.has_value());
  theirs.release(*got);
}

TEST(HonestWakeupTest, LatchReArmedAtOnceMakesAWaiterMissTheOpening) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const std::string name = unique_name("wake:latch:");
  auto latch = a.count_down_latch(name);
  auto theirs = b.count_down_latch(name);
  ASSERT_TRUE(latch.try_set_count(1));
  auto waiter = std::async(std::launch::async, [&] { return theirs.wait_for(20s); });
  ASSERT_EQ(waiter.wait_for(500ms), std::future_status::timeout);  // it waits (subscribed)
  // count_down() to zero and try_set_count(1) back to back, as two clients could: in one
  // script here, so the waiter's re-check surely comes after the re-arm.
  server.command({"EVAL",
                  "redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], '0'); "
                  "redis.call('set', KEYS[1], 1); redis.call('publish', KEYS[2], '1')",
                  "2", name, "redisson_countdownlatch__channel__{" + name + "}"});
  EXPECT_EQ(latch.count(), 1);
  ASSERT_EQ(waiter.wait_for(5s), std::future_status::ready) << "the waiter missed the opening";
  EXPECT_TRUE(waiter.get());
  latch.remove();
}

TEST(HonestWakeupTest, RedLockLeaseWithNoPossibleValiditySpinsForever) {
  std::vector<std::unique_ptr<RedisServer>> servers;
  std::vector<std::unique_ptr<redisync::Client>> clients;
  std::vector<redisync::AnyLock> members;
  const std::string name = unique_name("wake:red:");
  for (int i = 0; i < 3; ++i) {
    servers.push_back(std::make_unique<RedisServer>());
    clients.push_back(std::make_unique<redisync::Client>(config_for(*servers.back())));
    members.emplace_back(clients.back()->fair_lock(name));
  }
  redisync::RedLock red(members);
  // Bounded first: the old code spun for the whole wait (and lock(2ms) forever).
  ASSERT_THROW(red.try_lock_for(1s, 2ms), redisync::InvalidArgument);
  try {
    red.lock(2ms);
    FAIL() << "a 2 ms lease was accepted";
  } catch (const redisync::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("at least 10 ms"), std::string::npos) << e.what();
  }
  for (auto& s : servers) EXPECT_EQ(s->command({"EXISTS", name}).as_integer(), 0);
}
