// SPDX-License-Identifier: Apache-2.0
// MultiLock members are taken with 2 x wait while walking and then set to the caller's lease
// (docs/wire-format.md §6 step 5, MultiLockMember::set_expiry). The set updated Hold::lease but
// neither the hold's per-acquisition lease (Hold::leases) nor the watchdog's local deadline,
// which kept counting the walking lease: with a lease longer than 2 x wait the holder was told
// "lost" while its key still had most of its lease, and with a shorter one it was told only
// long after the key had expired on the server.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <optional>
#include <string>

#include "redisync/redisync.h"
#include "support/lease_bound.h"
#include "support/lost_notices.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::LostNotices;
using redisync::test::RedisServer;
using redisync::test::config_for;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

// A MultiLock of one lock on its own server, and the lost-lock notices of its client.
class MultiLockExpiryNotice : public ::testing::Test {
 protected:
  void SetUp() override { notices.attach(client); }

  RedisServer server;
  redisync::Client client{config_for(server)};
  LostNotices notices;
  const std::string name = unique_name("ml:");
  redisync::MultiLock lock{{redisync::AnyLock(client.lock(name))}};
};

}  // namespace

TEST_F(MultiLockExpiryNotice, LeaseLongerThanTheWalkingLeaseIsNotReportedLostEarly) {
  // Walking lease 2 x 200 ms = 400 ms (local deadline 360 ms); the lease set on success: 4 s.
  ASSERT_TRUE(lock.try_lock_for(200ms, 4000ms));
  const bool told = notices.wait_for(1, 1500ms);
  const long long ttl = server.command({"PTTL", name}).as_integer();
  if (ttl <= 0) GTEST_SKIP() << "the machine was too slow to tell (the key expired meanwhile)";
  EXPECT_FALSE(told) << "told 'lost' while the lock still had " << ttl << " ms of its lease";
  EXPECT_TRUE(lock.is_held_by_current_thread());
  EXPECT_EQ(lock.release().outcome, redisync::ReleaseOutcome::released);
}

TEST_F(MultiLockExpiryNotice, LeaseShorterThanTheWalkingLeaseIsReportedBeforeTheKeyExpires) {
  // Walking lease 2 x 5 s = 10 s; the lease set on success: 600 ms.
  ASSERT_TRUE(lock.try_lock_for(5000ms, 600ms));
  ASSERT_TRUE(wait_until([&] { return server.command({"EXISTS", name}).as_integer() == 0; }, 5s));
  // The key has expired: the holder must have been told by now (its local deadline came
  // first); allow the I/O thread a moment to run the handler, far below the 9 s of the
  // walking lease's deadline.
  EXPECT_TRUE(notices.wait_for(1, 2000ms)) << "the holder was not told when its lease ended";
  EXPECT_FALSE(lock.is_held_by_current_thread());
}

TEST_F(MultiLockExpiryNotice, ALeaseSetAlsoEndsTheOwnersEarlierFixedHoldOfTheMember) {
  // The owner holds the member directly for 5 s, then again through the MultiLock with 700 ms:
  // the lease set (PEXPIRE 700) ends the key, and with it both holds, 700 ms later. Releasing
  // the MultiLock's hold leaves the direct one, whose local deadline once counted its own 5 s
  // again from its acquire: the holder would have been told 4 s after the key had expired.
  auto direct = client.lock(name);
  direct.lock(5000ms);
  ASSERT_TRUE(lock.try_lock_for(200ms, 700ms));
  const auto released = lock.release();
  EXPECT_EQ(released.outcome, redisync::ReleaseOutcome::still_held) << released.error;
  EXPECT_EQ(redisync::test::lease_bound_violation(client, server, name), "");
  ASSERT_TRUE(wait_until([&] { return server.command({"EXISTS", name}).as_integer() == 0; }, 5s));
  EXPECT_TRUE(notices.wait_for(1, 2000ms)) << "the holder was not told when its lease ended";
}

// The walk's early member hold ends while the walk waits for the next member, and another
// client takes that member; the walk then succeeds and sets its lease on every member it took.
// A plain PEXPIRE there cut the other client's hold (lease property, multi seed 55526: B's
// member ended 700 ms before B's deadline). The lease is set only under the owner's field.
TEST(MultiLockLeaseSet, NeverCutsAnotherClientsHoldOfAMemberTheWalkNoLongerHolds) {
  RedisServer server;
  redisync::Client client{config_for(server)}, other{config_for(server)};
  client.on_lock_lost([](const redisync::LockLostEvent&) {});
  const std::string first = unique_name("ml-first:"), second = unique_name("ml-second:");
  auto blocker = other.lock(second);
  blocker.lock(1500ms);  // the walk waits for the second member until this ends
  redisync::MultiLock both{{redisync::AnyLock(client.lock(first)),
                            redisync::AnyLock(client.lock(second))}};
  auto walk = std::async(std::launch::async, [&] { return both.try_lock_for(5000ms, 400ms); });
  ASSERT_TRUE(wait_until([&] { return server.command({"EXISTS", first}).as_integer() == 1; }, 5s));
  server.command({"DEL", first});  // the walk's hold of the first member ends (an expiry)
  auto taker = other.lock(first);
  taker.lock(20s);                 // and another client takes it
  walk.wait();                     // the walk ends once the blocker's 1.5 s are over
  const long long ttl = server.command({"PTTL", first}).as_integer();
  EXPECT_GT(ttl, 10'000) << "the walk's lease set cut the other client's 20 s lease to " << ttl
                         << " ms";
  taker.unlock();
}
