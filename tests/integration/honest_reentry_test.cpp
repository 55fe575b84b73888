// Issue 22 items 2 and 3: re-entrant holds with different leases must not break exclusion,
// and a read hold whose own markers expired is reported lost, not silently "renewed".
// The watchdog lease is 1 s here: a key that outlives 1.6 s after a partial release does so
// because the remaining hold keeps it, not by the watchdog lease alone.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>

#include "lock_kinds_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;
using namespace redisync::test::kinds;

namespace {

redisync::Config short_watchdog(const RedisServer& server) {
  auto cfg = config_for(server);
  cfg.lock_watchdog_timeout = 1000ms;
  return cfg;
}

using Factory = std::function<redisync::BasicLock(redisync::Client&, const std::string&)>;

struct Kind {
  const char* name;
  Factory make;
};

const Kind kKinds[] = {
    {"fair", [](redisync::Client& c, const std::string& n) -> redisync::BasicLock {
       return c.fair_lock(n);
     }},
    {"fenced", [](redisync::Client& c, const std::string& n) -> redisync::BasicLock {
       return c.fenced_lock(n);
     }},
    {"spin", [](redisync::Client& c, const std::string& n) -> redisync::BasicLock {
       return c.spin_lock(n);
     }},
    {"write", [](redisync::Client& c, const std::string& n) -> redisync::BasicLock {
       return c.read_write_lock(n).write_lock();
     }},
};

void PrintTo(const Kind& kind, std::ostream* os) { *os << kind.name; }

class ReentryTest : public ::testing::TestWithParam<Kind> {};

}  // namespace

// lock(6s); lock(); unlock(): the 6 s hold remains, so the key must outlive the watchdog lease.
TEST_P(ReentryTest, PartialReleaseOfAWatchdogHoldCutsTheExpiryOfALongerHold) {
  RedisServer server;
  redisync::Client a(short_watchdog(server)), b(short_watchdog(server));
  const std::string name = unique_name(std::string("reentry:") + GetParam().name + ":");
  auto mine = GetParam().make(a, name);
  auto theirs = GetParam().make(b, name);
  mine.lock(6s);
  mine.lock();
  mine.unlock();
  std::this_thread::sleep_for(1600ms);  // past the watchdog lease, well within the 6 s hold
  EXPECT_TRUE(mine.is_held_by_current_thread());
  EXPECT_FALSE(theirs.try_lock()) << "another client got the lock while a 6 s hold remains";
  mine.unlock();
  EXPECT_FALSE(mine.is_locked());
}

// lock(); lock(500ms); unlock(): the watchdog hold remains and must stay renewed.
TEST_P(ReentryTest, PartialReleaseOfAShortHoldStopsTheWatchdogOfTheRemainingHold) {
  RedisServer server;
  redisync::Client a(short_watchdog(server)), b(short_watchdog(server));
  const std::string name = unique_name(std::string("reentry:") + GetParam().name + ":");
  auto mine = GetParam().make(a, name);
  auto theirs = GetParam().make(b, name);
  mine.lock();
  mine.lock(500ms);
  mine.unlock();
  std::this_thread::sleep_for(1600ms);  // past the 500 ms lease and the watchdog lease
  EXPECT_TRUE(mine.is_held_by_current_thread());
  EXPECT_FALSE(theirs.try_lock()) << "another client got the lock while a watchdog hold remains";
  mine.unlock();
  EXPECT_FALSE(mine.is_locked());
}

// lock(2s); lock(); unlock(): only the 2 s hold remains, and it needs no renewal. The renewals
// must stop, so the key ends with that fixed lease and another client gets in (the watchdog
// used to keep renewing it forever).
TEST_P(ReentryTest, FixedHoldLeftByAPartialReleaseIsRenewedForever) {
  RedisServer server;
  redisync::Client a(short_watchdog(server)), b(short_watchdog(server));
  const std::string name = unique_name(std::string("reentry:") + GetParam().name + ":");
  auto mine = GetParam().make(a, name);
  auto theirs = GetParam().make(b, name);
  mine.lock(2s);
  mine.lock();
  mine.unlock();
  EXPECT_TRUE(wait_until([&] { return server.command({"EXISTS", name}).as_integer() == 0; }, 6s,
                         50ms))
      << "the key outlived its only remaining (2 s, fixed) hold: still renewed";
  EXPECT_TRUE(theirs.try_lock()) << "another client cannot take the lock after the 2 s lease";
  theirs.unlock();
  mine.unlock();  // lost by now; unlock() only reports it
}

INSTANTIATE_TEST_SUITE_P(Kinds, ReentryTest, ::testing::ValuesIn(kKinds),
                         [](const auto& p) { return std::string(p.param.name); });

// A writer's 6 s hold with a read hold of the same owner on top: releasing the read hold must
// leave the write hold's expiry alone (the read renewal used to cut it to the watchdog lease).
TEST(ReentryRwTest, WriterReleasingItsReadHoldLetsAnotherWriterIn) {
  RedisServer server;
  redisync::Client a(short_watchdog(server)), b(short_watchdog(server));
  const std::string name = unique_name("reentry:rw:");
  auto rw = a.read_write_lock(name);
  auto other = b.read_write_lock(name);
  rw.lock(6s);
  rw.lock_shared();
  std::this_thread::sleep_for(500ms);  // a read renewal runs (every lease / 3)
  rw.unlock_shared();
  std::this_thread::sleep_for(1100ms);
  EXPECT_TRUE(rw.write_lock().is_held_by_current_thread());
  EXPECT_FALSE(other.try_lock()) << "another writer got in while a 6 s write hold remains";
  rw.unlock();
}

// Item 3: readers A and B; A's marker expires (as after A was stopped past its lease) while B
// keeps the hash alive. A's next renewal must report the hold lost.
TEST(ReentryRwTest, ReadHoldWhoseMarkerExpiredIsRenewedWithoutNotice) {
  RedisServer server;
  redisync::Client a(short_watchdog(server)), b(short_watchdog(server));
  std::atomic<int> lost{0};
  a.on_lock_lost([&](const redisync::LockLostEvent&) { ++lost; });
  const std::string name = unique_name("reentry:rw:");
  auto ra = a.read_write_lock(name);
  auto rb = b.read_write_lock(name);
  ra.lock_shared();
  rb.lock_shared();
  const std::string field = a.id() + ":" + std::to_string(redisync::Client::current_thread_id());
  const std::string marker = "{" + name + "}:" + field + ":rwlock_timeout:1";
  ASSERT_EQ(server.command({"DEL", marker}).as_integer(), 1);  // A's lease ran out
  EXPECT_TRUE(wait_until([&] { return lost.load() > 0; }, 3s, 20ms))
      << "A's renewal succeeded although its own marker is gone";
  EXPECT_THROW(ra.unlock_shared_checked(), redisync::LockLostError);
  rb.unlock_shared();
}

// The same two cases for redisync::Lock (its own flows until it joins the shared machinery).
TEST(ReentryLockTest, PartialReleaseOfAWatchdogHoldCutsTheExpiryOfALongerHold) {
  RedisServer server;
  redisync::Client a(short_watchdog(server)), b(short_watchdog(server));
  const std::string name = unique_name("reentry:lock:");
  auto mine = a.lock(name);
  auto theirs = b.lock(name);
  mine.lock(6s);
  mine.lock();
  mine.unlock();
  std::this_thread::sleep_for(1600ms);
  EXPECT_TRUE(mine.is_held_by_current_thread());
  EXPECT_FALSE(theirs.try_lock()) << "another client got the lock while a 6 s hold remains";
  mine.unlock();
}

TEST(ReentryLockTest, PartialReleaseOfAShortHoldStopsTheWatchdogOfTheRemainingHold) {
  RedisServer server;
  redisync::Client a(short_watchdog(server)), b(short_watchdog(server));
  const std::string name = unique_name("reentry:lock:");
  auto mine = a.lock(name);
  auto theirs = b.lock(name);
  mine.lock();
  mine.lock(500ms);
  mine.unlock();
  std::this_thread::sleep_for(1600ms);
  EXPECT_TRUE(mine.is_held_by_current_thread());
  EXPECT_FALSE(theirs.try_lock()) << "another client got the lock while a watchdog hold remains";
  mine.unlock();
}

TEST(ReentryLockTest, FixedHoldLeftByAPartialReleaseIsRenewedForever) {
  RedisServer server;
  redisync::Client a(short_watchdog(server)), b(short_watchdog(server));
  const std::string name = unique_name("reentry:lock:");
  auto mine = a.lock(name);
  auto theirs = b.lock(name);
  mine.lock(2s);
  mine.lock();
  mine.unlock();
  EXPECT_TRUE(wait_until([&] { return server.command({"EXISTS", name}).as_integer() == 0; }, 6s,
                         50ms))
      << "the key outlived its only remaining (2 s, fixed) hold: still renewed";
  EXPECT_TRUE(theirs.try_lock()) << "another client cannot take the lock after the 2 s lease";
  theirs.unlock();
  mine.unlock();
}

// The read side: lock_shared(2s); lock_shared(); unlock_shared() leaves a 2 s read hold whose
// marker must not be renewed on.
TEST(ReentryRwTest, FixedReadHoldLeftByAPartialReleaseIsRenewedForever) {
  RedisServer server;
  redisync::Client a(short_watchdog(server)), b(short_watchdog(server));
  const std::string name = unique_name("reentry:rw:");
  auto rw = a.read_write_lock(name);
  auto other = b.read_write_lock(name);
  rw.lock_shared(2s);
  rw.lock_shared();
  rw.unlock_shared();
  EXPECT_TRUE(wait_until([&] { return server.command({"EXISTS", name}).as_integer() == 0; }, 6s,
                         50ms))
      << "the read lock outlived its only remaining (2 s, fixed) hold: still renewed";
  EXPECT_TRUE(other.try_lock()) << "a writer cannot get in after the 2 s read lease";
  other.unlock();
  rw.unlock_shared();
}
