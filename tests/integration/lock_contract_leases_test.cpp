// SPDX-License-Identifier: Apache-2.0
// The lock contract for every lock kind (traits in lock_contract.h), leases: a lease that ran
// out is a lost hold, force unlock, the watchdog, and re-entrant holds with different leases
// (issue 22 item 2, was honest_reentry_test.cpp's per-kind cases).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "lock_contract.h"

using namespace std::chrono_literals;
using redisync::ReleaseOutcome;
using redisync::test::wait_until;
using redisync::test::watchdog_config;
using namespace redisync::test::contract;

namespace {

template <class K>
class LockContractLeases : public ContractFixture<K> {
 protected:
  // Clients whose watchdog lease is 1 s: a key that outlives 1.6 s after a partial release
  // does so because the remaining hold keeps it, not by the watchdog lease alone.
  redisync::Client short_a_{watchdog_config(this->server_, 1000ms)};
  redisync::Client short_b_{watchdog_config(this->server_, 1000ms)};
};
TYPED_TEST_SUITE(LockContractLeases, Kinds, KindNames);

TYPED_TEST(LockContractLeases, ALockThatExpiredIsReportedLost) {
  auto lock = this->mine();
  ASSERT_TRUE(lock.try_lock_for(0ms, 200ms));  // fixed lease, never renewed
  ASSERT_TRUE(wait_until([&] { return !this->key_exists(); }, 5s));
  EXPECT_EQ(lock.release().outcome, ReleaseOutcome::lost);
  // A fresh hold after the loss starts afresh, and unlock() of a lost one throws LockLostError.
  ASSERT_TRUE(lock.try_lock_for(0ms, 200ms));
  ASSERT_TRUE(wait_until([&] { return !this->key_exists(); }, 5s));
  EXPECT_THROW(lock.unlock_checked(), redisync::LockLostError);
}

// One way on purpose (the one-machinery issue): a force unlock that found nothing to release
// leaves this process's holds alone, so a holder whose lock had already expired still learns
// of the loss (Lock used to forget its holds, and the holder was told "not held").
TYPED_TEST(LockContractLeases, ForceUnlockOfAnExpiredLockLeavesTheHolderToLearnOfTheLoss) {
  auto lock = this->mine();
  ASSERT_TRUE(lock.try_lock_for(0ms, 200ms));
  ASSERT_TRUE(wait_until([&] { return !this->key_exists(); }, 5s));
  EXPECT_FALSE(this->theirs().force_unlock());
  EXPECT_FALSE(this->mine().force_unlock());
  EXPECT_EQ(lock.release().outcome, ReleaseOutcome::lost);
}

TYPED_TEST(LockContractLeases, ForceUnlockFreesAHeldLockForOthers) {
  auto lock = this->mine();
  lock.lock();
  auto other = this->theirs();
  EXPECT_TRUE(other.force_unlock());
  EXPECT_FALSE(this->key_exists());
  EXPECT_TRUE(this->elsewhere([&] {
    const bool got = other.try_lock();
    if (got) other.unlock();
    return got;
  }));
}

TYPED_TEST(LockContractLeases, TheWatchdogKeepsAHeldLockPastItsLease) {
  auto lock = this->mine();
  lock.lock();  // watchdog lease 1.5 s
  std::this_thread::sleep_for(3500ms);
  EXPECT_TRUE(this->key_exists());
  EXPECT_TRUE(lock.is_held_by_current_thread());
  const auto pttl = this->server_.command({"PTTL", this->name_}).as_integer();
  EXPECT_GT(pttl, 0);
  EXPECT_LE(pttl, 1500);
  lock.unlock();
  EXPECT_FALSE(this->key_exists());
}

// lock(6s); lock(); unlock(): the 6 s hold remains, so the key must outlive the watchdog lease.
// A non-reentrant kind refuses the lock() and must leave the 6 s hold as it was.
TYPED_TEST(LockContractLeases, PartialReleaseOfAWatchdogHoldKeepsTheExpiryOfALongerHold) {
  auto mine = TypeParam::make(this->short_a_, this->name_);
  auto theirs = TypeParam::rival(this->short_b_, this->name_);
  mine.lock(6s);
  if constexpr (TypeParam::reentrant) {
    mine.lock();
    mine.unlock();
  } else {
    EXPECT_THROW(mine.lock(), redisync::ReentryError);
  }
  EXPECT_GT(this->pttl(), 1000) << "the key's expiry no longer covers the 6 s hold";
  std::this_thread::sleep_for(1600ms);  // past the watchdog lease, well within the 6 s hold
  EXPECT_TRUE(mine.is_held_by_current_thread());
  EXPECT_FALSE(theirs.try_lock()) << "another client got the lock while a 6 s hold remains";
  mine.unlock();
  EXPECT_FALSE(mine.is_locked());
}

// lock(); lock(500ms); unlock(): the watchdog hold remains and must stay renewed. A
// non-reentrant kind refuses the lock(500ms) and must keep renewing its watchdog hold.
TYPED_TEST(LockContractLeases, PartialReleaseOfAShortHoldKeepsTheWatchdogOfTheRemainingHold) {
  auto mine = TypeParam::make(this->short_a_, this->name_);
  auto theirs = TypeParam::rival(this->short_b_, this->name_);
  mine.lock();
  if constexpr (TypeParam::reentrant) {
    mine.lock(500ms);
    mine.unlock();
  } else {
    EXPECT_THROW(mine.lock(500ms), redisync::ReentryError);
  }
  std::this_thread::sleep_for(1600ms);  // past the 500 ms lease and the watchdog lease
  EXPECT_TRUE(mine.is_held_by_current_thread());
  EXPECT_FALSE(theirs.try_lock()) << "another client got the lock while a watchdog hold remains";
  mine.unlock();
  EXPECT_FALSE(mine.is_locked());
}

// lock(2s); lock(); unlock(): only the 2 s hold remains, and it needs no renewal. The renewals
// must stop, so the key ends with that fixed lease and another client gets in (the watchdog
// used to keep renewing it forever). A non-reentrant kind refuses the lock() and its 2 s hold
// ends the same way.
TYPED_TEST(LockContractLeases, FixedHoldLeftByAPartialReleaseIsRenewedForever) {
  auto mine = TypeParam::make(this->short_a_, this->name_);
  auto theirs = TypeParam::rival(this->short_b_, this->name_);
  mine.lock(2s);
  if constexpr (TypeParam::reentrant) {
    mine.lock();
    mine.unlock();
  } else {
    EXPECT_THROW(mine.lock(), redisync::ReentryError);
  }
  EXPECT_TRUE(wait_until([&] { return !this->key_exists(); }, 6s, 50ms))
      << "the key outlived its only remaining (2 s, fixed) hold: still renewed";
  EXPECT_TRUE(theirs.try_lock()) << "another client cannot take the lock after the 2 s lease";
  theirs.unlock();
  mine.unlock();  // lost by now; unlock() only reports it
}

}  // namespace
