// Issue 22 items 2 and 3 for a ReadWriteLock's two sides together: a writer's own read hold
// must not cut its write hold's expiry, and a read hold whose own markers expired is reported
// lost, not silently "renewed". (Item 2 for each kind alone, re-entrant holds with different
// leases, is in lock_contract_leases_test.cpp.) The watchdog lease is 1 s here.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "lock_kinds_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;
using namespace redisync::test::kinds;

namespace {

redisync::Config short_watchdog(const RedisServer& server) {
  return redisync::test::watchdog_config(server, 1000ms);
}

}  // namespace

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
