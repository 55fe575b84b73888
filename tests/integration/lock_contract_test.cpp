// SPDX-License-Identifier: Apache-2.0
// The lock contract, one typed suite run for every lock kind (Lock, FairLock, FencedLock,
// SpinLock, both sides of a ReadWriteLock, NonReentrantLock, NonReentrantFairLock; traits in
// lock_contract.h): reentrancy (or its refusal), ownership, exclusion, timed waits, wake-ups,
// Guard, a key of the wrong type. Leases, loss, force unlock and the watchdog are in
// lock_contract_leases_test.cpp, a stalled server in lock_contract_faults_test.cpp. Each kind
// runs on the shared machinery of src/sync/locks/lock_kind.h; a kind that drifts from the contract
// fails here.
#include "lock_contract.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "support/expect_error.h"
#include "support/server_stats.h"

using namespace std::chrono_literals;
using redisync::ReleaseOutcome;
using redisync::test::expect_error;
using redisync::test::no_channels;
using redisync::test::wait_until;
using namespace redisync::test::contract;

namespace {

template <class K>
class LockContract : public ContractFixture<K> {};
TYPED_TEST_SUITE(LockContract, Kinds, KindNames);

// A reentrant kind counts holds, one unlock each; a non-reentrant one refuses the holder's
// second acquire with ReentryError (include/redisync/non_reentrant_lock.h), changes nothing,
// and one unlock releases.
TYPED_TEST(LockContract, ASecondAcquireByTheHolderReentersOrIsRefused) {
  auto lock = this->mine();
  lock.lock();
  if constexpr (TypeParam::reentrant) {
    lock.lock();
    EXPECT_EQ(lock.hold_count(), 2);
    lock.unlock();
    EXPECT_TRUE(lock.is_held_by_current_thread());
    EXPECT_TRUE(lock.is_locked());
  } else {
    expect_error<redisync::ReentryError>([&] { lock.lock(); }, {this->name_, "already held"});
    expect_error<redisync::ReentryError>([&] { (void)lock.try_lock(); },
                                         {this->name_, "already held"});
    expect_error<redisync::ReentryError>([&] { (void)lock.try_lock_for(5s); },
                                         {this->name_, "already held"});
    EXPECT_EQ(lock.hold_count(), 1);
    EXPECT_TRUE(lock.is_held_by_current_thread());
  }
  lock.unlock();
  EXPECT_FALSE(lock.is_held_by_current_thread());
  EXPECT_FALSE(lock.is_locked());
  EXPECT_FALSE(this->key_exists());
}

// Exclusion is against the kind's rival (the kind itself; the write lock for a read lock);
// two readers share.
TYPED_TEST(LockContract, AnotherOwnerIsExcludedAndCannotRelease) {
  auto lock = this->mine();
  lock.lock();
  auto other = this->rival();
  EXPECT_FALSE(this->elsewhere([&] { return other.try_lock(); }));
  EXPECT_FALSE(this->elsewhere([&] { return other.try_lock_for(150ms); }));
  auto peer = this->theirs();
  EXPECT_EQ(this->elsewhere([&] { return peer.release().outcome; }), ReleaseOutcome::not_held);
  EXPECT_TRUE(this->elsewhere([&] {
    try {
      peer.unlock_checked();  // unlock() never throws (issue 17 item 5)
    } catch (const redisync::NotOwnerError&) {
      return true;
    }
    return false;
  }));
  // Another thread of the same client is another owner too.
  auto same_client = TypeParam::rival(this->a_, this->name_);
  EXPECT_FALSE(this->elsewhere([&] { return same_client.try_lock(); }));
  if constexpr (TypeParam::shared) {
    EXPECT_TRUE(this->acquirable_elsewhere(peer)) << "two readers must share";
  }
  EXPECT_TRUE(lock.is_held_by_current_thread());
  lock.unlock();
  EXPECT_TRUE(this->acquirable_elsewhere(other));
}

// unlock() by a thread or client that does not hold the lock frees nothing; unlock_checked()
// raises NotOwnerError naming the lock (was LockTest.UnlockByAnotherThreadRaisesNotOwner).
TYPED_TEST(LockContract, UnlockByAnotherOwnerNeverFreesTheLock) {
  auto lock = this->mine();
  lock.lock();
  std::jthread other([&] {
    lock.unlock();  // never throws; reported, frees nothing
    try {
      lock.unlock_checked();
      ADD_FAILURE() << "expected NotOwnerError";
    } catch (const redisync::NotOwnerError& e) {
      EXPECT_NE(std::string(e.what()).find(lock.name()), std::string::npos) << e.what();
    }
    EXPECT_EQ(lock.release().outcome, ReleaseOutcome::not_held);
  });
  other.join();
  auto peer = this->theirs();
  this->elsewhere([&] { peer.unlock(); });
  EXPECT_TRUE(this->key_exists());
  EXPECT_TRUE(lock.is_held_by_current_thread());
  auto rival = this->rival();
  EXPECT_FALSE(this->acquirable_elsewhere(rival)) << "an unlock by a non-holder freed the lock";
  lock.unlock();
  EXPECT_THROW(lock.unlock_checked(), redisync::NotOwnerError);  // double unlock
}

TYPED_TEST(LockContract, AWaiterGetsTheLockWhenItIsReleased) {
  auto lock = this->mine();
  lock.lock();
  auto other = this->rival();
  std::atomic<bool> waiting{false};
  auto waiter = std::async(std::launch::async, [&] {
    waiting = true;
    const bool got = other.try_lock_for(20s);
    if (got) other.unlock();
    return got;
  });
  ASSERT_TRUE(wait_until([&] { return waiting.load(); }, 5s));
  std::this_thread::sleep_for(100ms);  // let the waiter make its first attempt
  lock.unlock();
  ASSERT_EQ(waiter.wait_for(25s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
}

// A timed wait on a held lock gives up once its wait is over and leaves no subscription (nor
// any other channel) behind (was LockTest.TimedOutWaitLeavesNoSubscription).
TYPED_TEST(LockContract, ATimedWaitOnAHeldLockGivesUpAndLeavesNoSubscription) {
  this->mine().lock(10s);
  auto other = this->rival();
  const auto start = std::chrono::steady_clock::now();
  auto wait = std::async(std::launch::async, [&] { return other.try_lock_for(300ms); });
  ASSERT_EQ(wait.wait_for(20s), std::future_status::ready) << "the timed wait hung";
  EXPECT_FALSE(wait.get());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  EXPECT_TRUE(wait_until([&] { return no_channels(this->server_); }, 3s));
}

TYPED_TEST(LockContract, GuardReleasesAtScopeEndAndReportsALossWithoutThrowing) {
  auto lock = this->mine();
  {
    redisync::Guard<typename TestFixture::Handle> guard(lock);
    EXPECT_TRUE(lock.is_held_by_current_thread());
  }
  EXPECT_FALSE(this->key_exists());
  ASSERT_TRUE(lock.try_lock_for(0ms, 200ms));
  redisync::Guard<typename TestFixture::Handle> adopted(lock, std::adopt_lock);
  ASSERT_TRUE(wait_until([&] { return !this->key_exists(); }, 5s));
  EXPECT_EQ(adopted.release().outcome, ReleaseOutcome::lost);
}

TYPED_TEST(LockContract, AKeyOfAnotherTypeIsAServerErrorNamingTheLock) {
  this->server_.command({"SET", this->name_, "not a lock"});
  auto lock = this->mine();
  try {
    lock.lock();
    FAIL() << "expected ServerError";
  } catch (const redisync::ServerError& e) {
    EXPECT_NE(std::string(e.what()).find(this->name_), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("WRONGTYPE"), std::string::npos) << e.what();
  }
  EXPECT_EQ(this->server_.command({"GET", this->name_}).as_string(), "not a lock");
}

}  // namespace
