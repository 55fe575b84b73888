// SPDX-License-Identifier: Apache-2.0
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
