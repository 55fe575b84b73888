// SPDX-License-Identifier: Apache-2.0
// A short fixed lease taken while the same Client watches a watchdog hold: its lost notice
// must come at its own deadline. Before, the deadline timer stayed armed for the watchdog
// hold's deadline (lease 30 s -> 27 s), so the fixed hold's holder was told ~27 s late, long
// after its key had expired and anyone could take it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;

TEST(LostNoticeMixed, FixedLeaseTakenBesideAWatchdogHoldIsToldAtItsOwnDeadline) {
  RedisServer server;
  redisync::Client client(redisync::test::config_for(server));  // watchdog lease 30 s
  std::atomic<int> told_short{0};
  const auto short_name = unique_name("short:");
  client.on_lock_lost([&](const redisync::LockLostEvent& e) {
    if (e.name == short_name) ++told_short;
  });
  auto long_hold = client.lock(unique_name("long:"));
  long_hold.lock();  // watchdog mode: the deadline timer is armed ~27 s ahead
  auto short_hold = client.lock(short_name);
  short_hold.lock(500ms);
  EXPECT_TRUE(wait_until([&] { return told_short.load() == 1; }, 5s, 10ms))
      << "the 500 ms hold was not reported lost within 5 s";
  EXPECT_FALSE(short_hold.is_held_by_current_thread());
  EXPECT_TRUE(long_hold.is_held_by_current_thread());
  long_hold.unlock();
}
