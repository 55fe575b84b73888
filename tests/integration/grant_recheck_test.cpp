// SPDX-License-Identifier: Apache-2.0
// A grant found by a recheck (issue 36, defect 1). In grant mode a waiter's attempt whose reply
// is lost is uncertain; a release then grants the waiter the lock, with the releaser's short
// grant lease, and the message of the grant is late. The waiter's recheck (or its settle step)
// finds its field in the lock: that hold is the grant, and must be treated as one (its local
// deadline the grant lease, then extended to the waiter's own lease), not as an ordinary
// acquire with a whole watchdog lease: the key would expire after the grant lease while its
// holder goes on, and a third client would take the lock beside it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <string>
#include <thread>

#include "grant_util.h"
#include "redisync/redisync.h"
#include "support/fault_proxy.h"
#include "support/lease_bound.h"
#include "support/lost_notices.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::AfterDrop;
using redisync::test::FaultProxy;
using redisync::test::LostNotices;
using redisync::test::RedisServer;
using redisync::test::RequestMatch;
using redisync::test::lease_bound_violation;
using redisync::test::unique_name;
using redisync::test::wait_until;
using redisync::test::grant::field_of;
using redisync::test::grant::grant_config;

namespace {

struct GrantKind {
  const char* name;
  std::function<redisync::BasicLock(redisync::Client&, const std::string&)> make;
  /// Whether the waiter with field_of() `field` is registered for a grant of `name` now.
  std::function<bool(RedisServer&, const std::string&, const std::string&)> registered;
  std::string suffix;  ///< after field_of() in the lock hash
};

bool in_zset(RedisServer& s, const std::string& key, const std::string& member) {
  return !s.command({"ZSCORE", key, member}).is_nil();
}

const GrantKind kKinds[] = {
    {"lock",
     [](redisync::Client& c, const std::string& n) -> redisync::BasicLock { return c.lock(n); },
     [](RedisServer& s, const std::string& n, const std::string& f) {
       return in_zset(s, "redisync_lock_grant:{" + n + "}", f);
     },
     ""},
    // FencedLock's recheck reads its token after finding the hold (a step of its own).
    {"fenced",
     [](redisync::Client& c, const std::string& n) -> redisync::BasicLock {
       return c.fenced_lock(n);
     },
     [](RedisServer& s, const std::string& n, const std::string& f) {
       return in_zset(s, "redisync_lock_grant:{" + n + "}", f);
     },
     ""},
    {"non_reentrant",
     [](redisync::Client& c, const std::string& n) -> redisync::BasicLock {
       return c.non_reentrant_lock(n);
     },
     [](RedisServer& s, const std::string& n, const std::string& f) {
       return in_zset(s, "redisync_lock_grant:{" + n + "}", f);
     },
     ""},
    {"fair",
     [](redisync::Client& c, const std::string& n) -> redisync::BasicLock {
       return c.fair_lock(n);
     },
     [](RedisServer& s, const std::string& n, const std::string& f) {
       return s.command({"HEXISTS", "redisync_fair_grant:{" + n + "}", f}).as_integer() == 1;
     },
     ""},
    {"write",
     [](redisync::Client& c, const std::string& n) -> redisync::BasicLock {
       return c.read_write_lock(n).write_lock();
     },
     [](RedisServer& s, const std::string& n, const std::string& f) {
       return in_zset(s, "redisync_rwlock_grant:{" + n + "}", f + ":write");
     },
     ":write"},
};

void PrintTo(const GrantKind& kind, std::ostream* os) { *os << kind.name; }

class GrantRecheckTest : public ::testing::TestWithParam<GrantKind> {};


// The waiter runs with the library's defaults (watchdog lease; `retry_attempts` aside) behind
// a proxy; the holder grants with a 5 s grant lease. The reply of the waiter's next attempt is
// dropped (`after`: the connection reset at once, or stalled until the grant is made), the
// holder releases (the grant's message held back on the proxy), and the waiter's next step
// finds the grant. From then on, for 8 s
// (the grant lease and more), the waiter's local deadline must never lie past the server's
// expiry of the lock (lease_bound_violation), a third client must not take the lock while the
// waiter was not told, and the waiter keeps the lock (the grant was extended).
void granted_while_uncertain(const GrantKind& kind, int retry_attempts, AfterDrop after) {
  RedisServer server;
  FaultProxy proxy(server.port());
  auto waiter_cfg = redisync::Config::from_url(proxy.url());
  waiter_cfg.handoff = redisync::Handoff::grant;
  waiter_cfg.retry_attempts = retry_attempts;
  redisync::Client waiter(waiter_cfg);
  redisync::Client holder(grant_config(server, 5000ms));
  redisync::Client third(grant_config(server));
  LostNotices lost;
  lost.attach(waiter);
  const auto name = unique_name(std::string("grant-recheck:") + kind.name + ":");

  {  // loads the scripts on the waiter's connection: its attempts are EVALSHA from now on
    auto warm = kind.make(waiter, name);
    warm.lock();
    warm.unlock();
  }
  auto held = kind.make(holder, name);
  held.lock();

  std::string field;
  std::atomic<bool> known{false};
  std::promise<void> release_it;
  auto released = release_it.get_future().share();
  // However the test ends, the waiting thread unlocks and returns.
  struct Release {
    std::promise<void>& p;
    ~Release() {
      try {
        p.set_value();
      } catch (const std::future_error&) {  // set already
      }
    }
  };
  auto waiting = std::async(std::launch::async, [&] {
    auto lock = kind.make(waiter, name);
    field = field_of(waiter);
    known = true;
    std::string outcome = "not acquired";
    try {
      if (lock.try_lock_for(20s)) outcome = "acquired";
    } catch (const redisync::Error& e) {
      outcome = e.what();
    }
    if (outcome == "acquired") {
      released.wait_for(30s);
      try {
        lock.unlock_checked();
      } catch (const redisync::Error&) {
      }
    }
    return outcome;
  });
  const Release release_on_exit{release_it};
  ASSERT_TRUE(wait_until([&] { return known.load(); }, 5s));
  ASSERT_TRUE(wait_until([&] { return kind.registered(server, name, field); }, 5s));

  // The grant's message must not complete the wait: the recheck is what finds the grant.
  proxy.set_subscriber_delay(30s);
  // The next attempt runs (and registers again), its reply is lost.
  proxy.drop_reply(RequestMatch{"EVALSHA", "", name}, 1, after);
  ASSERT_TRUE(wait_until([&] { return proxy.stats().dropped_replies >= 1; }, 5s))
      << "the waiter sent no attempt";
  held.unlock();  // grants the lock to the registered waiter
  // A stalled attempt fails now, and what follows goes on a fresh connection.
  if (after == AfterDrop::stall) proxy.reset_connections();
  ASSERT_TRUE(wait_until(
      [&] { return waiter.lease_deadline().has_value() || lost.all().size() > 0; }, 10s))
      << "the waiter never reported the lock held: "
      << (waiting.wait_for(0s) == std::future_status::ready ? waiting.get() : "still waiting");
  ASSERT_EQ(server.command({"HEXISTS", name, field + kind.suffix}).as_integer(), 1)
      << "the waiter holds the lock";

  // Bounded: 8 s in 20 ms steps, past the 5 s grant lease the hold started with. A third
  // client tries the lock whenever it is free on the server.
  std::string violation;
  bool third_beside = false;  // the third client held the lock while the waiter was not told
  const auto until = std::chrono::steady_clock::now() + 8s;
  for (int step = 0; step < 1000 && std::chrono::steady_clock::now() < until; ++step) {
    if (violation.empty()) violation = lease_bound_violation(waiter, server, name);  // the first
    if (!third_beside && server.command({"EXISTS", name}).as_integer() == 0) {
      auto other = kind.make(third, name);
      if (other.try_lock_for(0ms)) {
        third_beside = lost.all().empty();
        other.unlock();
      }
    }
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(violation, "");
  EXPECT_FALSE(third_beside)
      << "a third client took the lock while the waiter held it and was not told";
  EXPECT_TRUE(lost.all().empty()) << "the granted hold was not extended: the waiter lost it";
  release_it.set_value();
  ASSERT_EQ(waiting.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(waiting.get(), "acquired");
}

}  // namespace

// The connection drops with the reply; the retry is a recheck, which finds the grant.
TEST_P(GrantRecheckTest, AGrantFoundByTheRecheckIsExtendedAndItsDeadlineIsTheGrantLease) {
  granted_while_uncertain(GetParam(), redisync::Config{}.retry_attempts, AfterDrop::reset);
}

// No retries: the attempt's connection stalls and is reset after the grant, and the settle step
// (which asks, before answering "not acquired", whether the attempt acquired) finds the grant.
TEST_P(GrantRecheckTest, AGrantFoundByTheSettleStepIsExtendedAndItsDeadlineIsTheGrantLease) {
  granted_while_uncertain(GetParam(), 0, AfterDrop::stall);
}

INSTANTIATE_TEST_SUITE_P(Kinds, GrantRecheckTest, ::testing::ValuesIn(kKinds),
                         [](const auto& p) { return std::string(p.param.name); });
