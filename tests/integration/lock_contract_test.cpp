// The lock contract, one typed suite run for every exclusive lock kind (Lock, FairLock,
// FencedLock, SpinLock, a ReadWriteLock's write lock): reentrancy, ownership, exclusion, timed
// waits, wake-ups, a lost lock, force unlock, Guard, a key of the wrong type, the watchdog.
// Each kind runs on the shared machinery of src/sync/lock_kind.h; a kind that drifts from the
// contract fails here.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::ReleaseOutcome;
using redisync::test::config_for;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

// How the suite makes a handle of each kind.
struct PlainLock {
  using Handle = redisync::Lock;
  static Handle make(redisync::Client& c, const std::string& name) { return c.lock(name); }
};
struct Fair {
  using Handle = redisync::FairLock;
  static Handle make(redisync::Client& c, const std::string& name) { return c.fair_lock(name); }
};
struct Fenced {
  using Handle = redisync::FencedLock;
  static Handle make(redisync::Client& c, const std::string& name) { return c.fenced_lock(name); }
};
struct Spin {
  using Handle = redisync::SpinLock;
  static Handle make(redisync::Client& c, const std::string& name) { return c.spin_lock(name); }
};
struct Write {
  using Handle = redisync::WriteLock;
  static Handle make(redisync::Client& c, const std::string& name) {
    return c.read_write_lock(name).write_lock();
  }
};

template <class K>
class LockContract : public ::testing::Test {
 protected:
  using Handle = typename K::Handle;

  static redisync::Config config(const RedisServer& server) {
    auto cfg = config_for(server);
    cfg.lock_watchdog_timeout = 1500ms;  // renewals every 500 ms: several within a test
    return cfg;
  }

  RedisServer server_;
  redisync::Client a_{config(server_)};
  redisync::Client b_{config(server_)};
  const std::string name_ = unique_name("contract:");

  Handle mine() { return K::make(a_, name_); }
  Handle theirs() { return K::make(b_, name_); }

  // Runs `body` on another thread (another owner) and returns its result.
  template <class F>
  static auto elsewhere(F body) {
    return std::async(std::launch::async, body).get();
  }

  bool key_exists() { return server_.command({"EXISTS", name_}).as_integer() == 1; }
};

using Kinds = ::testing::Types<PlainLock, Fair, Fenced, Spin, Write>;
class KindNames {
 public:
  template <class K>
  static std::string GetName(int) {
    if (std::is_same_v<K, PlainLock>) return "Lock";
    if (std::is_same_v<K, Fair>) return "FairLock";
    if (std::is_same_v<K, Fenced>) return "FencedLock";
    if (std::is_same_v<K, Spin>) return "SpinLock";
    return "WriteLock";
  }
};
TYPED_TEST_SUITE(LockContract, Kinds, KindNames);

TYPED_TEST(LockContract, ReentrantHoldsNeedOneUnlockEach) {
  auto lock = this->mine();
  lock.lock();
  lock.lock();
  EXPECT_EQ(lock.hold_count(), 2);
  lock.unlock();
  EXPECT_TRUE(lock.is_held_by_current_thread());
  EXPECT_TRUE(lock.is_locked());
  lock.unlock();
  EXPECT_FALSE(lock.is_held_by_current_thread());
  EXPECT_FALSE(lock.is_locked());
  EXPECT_FALSE(this->key_exists());
}

TYPED_TEST(LockContract, AnotherOwnerIsExcludedAndCannotRelease) {
  auto lock = this->mine();
  lock.lock();
  auto other = this->theirs();
  EXPECT_FALSE(this->elsewhere([&] { return other.try_lock(); }));
  EXPECT_FALSE(this->elsewhere([&] { return other.try_lock_for(150ms); }));
  EXPECT_EQ(this->elsewhere([&] { return other.release().outcome; }), ReleaseOutcome::not_held);
  EXPECT_TRUE(this->elsewhere([&] {
    try {
      other.unlock_checked();  // unlock() never throws (issue 17 item 5)
    } catch (const redisync::NotOwnerError&) {
      return true;
    }
    return false;
  }));
  // Another thread of the same client is another owner too.
  auto same_client = this->mine();
  EXPECT_FALSE(this->elsewhere([&] { return same_client.try_lock(); }));
  EXPECT_TRUE(lock.is_held_by_current_thread());
  lock.unlock();
  EXPECT_TRUE(this->elsewhere([&] {
    const bool got = other.try_lock();
    if (got) other.unlock();
    return got;
  }));
}

TYPED_TEST(LockContract, AWaiterGetsTheLockWhenItIsReleased) {
  auto lock = this->mine();
  lock.lock();
  auto other = this->theirs();
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

TYPED_TEST(LockContract, ALockThatExpiredIsReportedLost) {
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
TYPED_TEST(LockContract, ForceUnlockOfAnExpiredLockLeavesTheHolderToLearnOfTheLoss) {
  auto lock = this->mine();
  ASSERT_TRUE(lock.try_lock_for(0ms, 200ms));
  ASSERT_TRUE(wait_until([&] { return !this->key_exists(); }, 5s));
  EXPECT_FALSE(this->theirs().force_unlock());
  EXPECT_FALSE(this->mine().force_unlock());
  EXPECT_EQ(lock.release().outcome, ReleaseOutcome::lost);
}

TYPED_TEST(LockContract, ForceUnlockFreesAHeldLockForOthers) {
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

TYPED_TEST(LockContract, TheWatchdogKeepsAHeldLockPastItsLease) {
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

}  // namespace
