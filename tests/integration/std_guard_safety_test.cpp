// SPDX-License-Identifier: Apache-2.0
// Issue 17 item 5: std::lock_guard / std::unique_lock / std::shared_lock call unlock() from a
// noexcept destructor, so an unlock() that throws there ends the program (std::terminate).
// These tests run a worker process that loses its lock (or its server) inside a std guard and
// check it exits normally, for every lock kind that meets BasicLockable; and that the loss
// still reaches the holder through the lost-lock handler and the checked forms.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::run_process;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

const std::vector<std::string> kKinds{"lock",     "fair",    "fenced", "spin",
                                      "rw-write", "rw-read", "multi",  "redlock"};

redisync::test::ProcessResult guard_loses(const std::string& kind, const std::string& how,
                                          RedisServer& server) {
  return run_process(
      {REDISYNC_TEST_WORKER, "guard-loses", kind, how, server.url(), unique_name("guard:")},
      60s);
}

}  // namespace

TEST(StdGuardSafety, LockLostInsideStdLockGuardDoesNotTerminate) {
  RedisServer server;
  for (const auto& kind : kKinds) {
    const auto r = guard_loses(kind, "lost", server);
    EXPECT_EQ(r.exit_code, 0) << kind << ": " << r.output;
    EXPECT_NE(r.output.find("survived"), std::string::npos) << kind << ": " << r.output;
  }
}

TEST(StdGuardSafety, ServerGoneInsideStdLockGuardDoesNotTerminate) {
  for (const auto& kind : kKinds) {
    RedisServer server;  // the worker shuts it down
    const auto r = guard_loses(kind, "server", server);
    EXPECT_EQ(r.exit_code, 0) << kind << ": " << r.output;
    EXPECT_NE(r.output.find("survived"), std::string::npos) << kind << ": " << r.output;
  }
}

// unlock() does not throw, but the loss is not silent: the lost-lock handler hears of a hold
// found gone at release (a fixed lease no watchdog watched), and unlock_checked() raises.
TEST(StdGuardSafety, UnlockOfALostFixedLeaseHoldReportsToTheLostHandler) {
  RedisServer server;
  redisync::Client client(redisync::Config::from_url(server.url()));
  std::atomic<int> lost{0};
  client.on_lock_lost([&](const redisync::LockLostEvent&) { ++lost; });
  // (Not the fair lock: its release answers "released" for a lock that no longer exists,
  // docs/wire-format.md §4.6, so a deleted fair lock is only found lost by the watchdog or its deadline.)
  auto write = client.read_write_lock(unique_name("rw:")).write_lock();
  auto spin = client.spin_lock(unique_name("spin:"));
  auto fenced = client.fenced_lock(unique_name("fenced:"));
  auto lock = client.lock(unique_name("lock:"));
  std::vector<redisync::BasicLock*> kinds{&write, &spin, &fenced};
  int expected = 0;
  for (auto* k : kinds) {
    k->lock(60s);
    server.command({"DEL", k->name()});
    EXPECT_NO_THROW(k->unlock());
    ++expected;
    EXPECT_TRUE(wait_until([&] { return lost.load() == expected; }, 3s)) << k->name();
    k->lock(60s);
    server.command({"DEL", k->name()});
    EXPECT_THROW(k->unlock_checked(), redisync::LockLostError) << k->name();
    EXPECT_THROW(k->unlock_checked(), redisync::NotOwnerError) << k->name();
    EXPECT_NO_THROW(k->unlock());  // not held: a line on stderr, no throw
  }
  lock.lock(60s);
  server.command({"DEL", lock.name()});
  EXPECT_NO_THROW(lock.unlock());
  EXPECT_TRUE(wait_until([&] { return lost.load() == expected + 1; }, 3s));
  lock.lock(60s);
  server.command({"DEL", lock.name()});
  EXPECT_THROW(lock.unlock_checked(), redisync::LockLostError);
}

// An unlock() that cannot reach the server stops renewing the hold, so the lock frees when
// its lease ends instead of being renewed forever by a process that let go of it.
TEST(StdGuardSafety, UnlockThatCannotReachTheServerStopsRenewing) {
  RedisServer server;
  auto cfg = redisync::Config::from_url(server.url());
  cfg.lock_watchdog_timeout = 900ms;
  cfg.timeout = 200ms;
  cfg.retry_attempts = 1;
  cfg.retry_interval = 20ms;
  redisync::Client client(cfg);
  auto lock = client.fair_lock(unique_name("fair:"));
  lock.lock();
  server.pause();
  EXPECT_NO_THROW(lock.unlock());
  server.resume();
  // Without renewals the watchdog lease (900 ms) runs out.
  EXPECT_TRUE(wait_until(
      [&] { return server.command({"EXISTS", lock.name()}).as_integer() == 0; }, 5s));
}
