// SPDX-License-Identifier: Apache-2.0
// A recheck that finds a hold it did not take (found by the lease property test,
// lease_property_test.cpp, seed 2 of non_reentrant_grant). An acquisition of a non-reentrant
// lock whose earlier attempt's outcome was lost can leave a hold of the owner on the server
// that the Client does not know of (the call then reported an error; the hold ends with its
// lease). The owner's next acquire is refused there (NON_REENTRANT_REACQUIRE, nothing
// written); if that reply is lost too, the recheck finds the owner's count one above the
// local count and reports the lock acquired. It is held, but with the earlier hold's lease:
// the local deadline must follow what the recheck read (the lock's PTTL from the read's
// send), not a whole new lease from the refused attempt's send. Before the fix the local
// deadline lay seconds past the server's expiry, and another client took the lock while the
// owner believed it held it.
#include <asio/use_future.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "grant_util.h"
#include "redisync/redisync.h"
#include "support/fault_proxy.h"
#include "support/lease_bound.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::AfterDrop;
using redisync::test::FaultProxy;
using redisync::test::RedisServer;
using redisync::test::RequestMatch;
using redisync::test::lease_bound_violation;
using redisync::test::unique_name;
using redisync::test::wait_until;
using redisync::test::grant::field_of;

namespace {

// A Client behind `proxy` with a short reply timeout: a held-back request fails soon, and its
// acquisition rechecks `retries` times, `interval` apart. Lost-lock notices are not printed.
redisync::Config proxied(const FaultProxy& proxy, int retries,
                         std::chrono::milliseconds interval) {
  auto cfg = redisync::Config::from_url(proxy.url());
  cfg.timeout = 300ms;
  cfg.retry_attempts = retries;
  cfg.retry_interval = interval;
  cfg.log = [](std::string_view) {};
  return cfg;
}

// The owner's count in the lock's hash on the server: "none" when its field is not there.
std::string owner_count(RedisServer& server, const std::string& name, const std::string& field) {
  const auto r = server.command({"HGET", name, field});
  return r.is_nil() ? std::string("none") : r.as_string();
}

void found_hold_keeps_its_own_lease(redisync::Handoff mode) {
  RedisServer server;
  FaultProxy proxy(server.port());
  auto cfg = proxied(proxy, 2, 20ms);
  cfg.handoff = mode;
  redisync::Client client(cfg);
  client.on_lock_lost([](const redisync::LockLostEvent&) {});
  const auto name = unique_name("recheck-found:");
  auto lock = client.non_reentrant_lock(name);
  lock.lock();  // loads the scripts: the attempts are EVALSHA from now on
  lock.unlock();

  // The hold an earlier acquisition of this owner left behind, 800 ms to go.
  server.command({"HSET", name, field_of(client), "1"});
  server.command({"PEXPIRE", name, "800"});
  // The next attempt is refused (this owner holds it) and its reply is lost.
  proxy.drop_reply(RequestMatch{"EVALSHA", "", name}, 1, AfterDrop::reset);
  ASSERT_TRUE(lock.try_lock_for(0ms, 20s));
  ASSERT_EQ(proxy.stats().dropped_replies, 1);
  // The owner holds the lock (the earlier hold): its notice is due before the server's expiry
  // of it, not 18 s (the 20 s lease less its margin) after the refused attempt.
  EXPECT_EQ(lease_bound_violation(client, server, name), "");
  EXPECT_TRUE(wait_until([&] { return lock.lost_by_current_thread(); }, 2s))
      << "not told by the time the server's hold had ended";
}

// The spin lock's settle step (its own loop): its attempt never reaches the server (held
// back, the request times out) and the settle finds the owner's hold a late copy of an earlier
// request took (lease_property_test seed 1236 of spin).
TEST(RecheckFoundHold, SpinLockSettleLocalDeadlineFollowsTheHoldFound) {
  RedisServer server;
  FaultProxy proxy(server.port());
  redisync::Client client(proxied(proxy, 6, 50ms));
  client.on_lock_lost([](const redisync::LockLostEvent&) {});
  const auto name = unique_name("recheck-found-spin:");
  auto lock = client.spin_lock(name);
  lock.lock();
  lock.unlock();
  server.command({"HSET", name, field_of(client), "1"});
  server.command({"PEXPIRE", name, "800"});
  proxy.withhold_request(RequestMatch{"EVALSHA", "", name}, 1);
  // The held-back connection stalls: reset once the attempt timed out, so the settle step's
  // check gets through on a new one.
  auto reset = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(450ms);
    proxy.reset_connections();
  });
  ASSERT_TRUE(lock.try_lock_for(2000ms, 20s));  // a wait: the spin loop, with its settle step
  reset.wait();
  ASSERT_EQ(proxy.stats().withheld, 1);
  EXPECT_EQ(lease_bound_violation(client, server, name), "");
}

// Two acquisitions of one owner whose outcomes are both unknown, while only one of them ran on
// the server (found by the lease property test, seed 3362 of multi: a MultiLock's walks leave
// a member's acquisitions of one owner running side by side). Each recheck reads the owner's
// count one above the local count; only one of them may count that hold as its own. Before
// the fix both did: the Client counted two holds where the server had one, the first release
// ended the lock on the server, and the owner went on believing it held it.
TEST(RecheckFoundHold, TwoAcquisitionsOfOneOwnerNeverCountOneHoldTwice) {
  RedisServer server;
  FaultProxy proxy(server.port());
  redisync::Client client(proxied(proxy, 3, 20ms));
  client.on_lock_lost([](const redisync::LockLostEvent&) {});
  const auto name = unique_name("recheck-twice:");
  auto lock = client.lock(name);
  lock.lock();  // loads the scripts: the attempts are EVALSHA from now on
  lock.unlock();
  const auto owner = redisync::Client::new_owner_id();
  const auto field = lock.owner_field(owner);
  auto count_on_server = [&] { return owner_count(server, name, field); };

  // The first acquisition runs on the server; its reply is lost.
  proxy.drop_reply(RequestMatch{"EVALSHA", "", name}, 1, AfterDrop::stall);
  auto first = lock.async_try_lock(owner, 10s, 20s, asio::use_future);
  ASSERT_TRUE(wait_until([&] { return count_on_server() == "1"; }, 5s));
  // The second never reaches the server: held in the proxy until its connection is reset.
  proxy.set_blackhole(redisync::test::Direction::to_server, true);
  auto second = lock.async_try_lock(owner, 10s, 20s, asio::use_future);
  std::this_thread::sleep_for(100ms);
  proxy.reset_connections();
  // Both rechecks then go out together on the next connection, before either is answered.
  std::this_thread::sleep_for(100ms);
  proxy.set_blackhole(redisync::test::Direction::to_server, false);

  ASSERT_TRUE(first.get());
  ASSERT_TRUE(second.get());
  proxy.clear();
  // Each acquisition reported is one hold on the server.
  EXPECT_EQ(count_on_server(), "2");
  lock.async_unlock(owner, asio::use_future).get();
  EXPECT_EQ(count_on_server(), "1") << "the first release ended a hold the owner still counts";
  lock.async_unlock(owner, asio::use_future).get();
  EXPECT_EQ(count_on_server(), "none");
}

// Grant mode: only one acquisition of an owner on a lock registers for grants. A release
// grants the lock to it; before its message comes, another acquisition of the same owner
// rechecks after an attempt whose reply was lost (refused: the lock was still held when it
// ran), and finds the owner's count one above the local one. That hold is the waiting
// acquisition's grant (the grant mark names its id), not the rechecking one's: the recheck
// attempts instead, and that attempt waits until the grant is taken, then re-enters. Each
// acquisition reported is one hold on the server. Without the recheck rule, the recheck took
// the grant as its own and the waiting acquisition took it again (server count 1 for 2).
// Without the wait, the attempt re-entered the grant at once, and the grantee, taking it by
// an attempt after its late message, re-entered too (server count 3 for 2).
TEST(RecheckFoundHold, GrantModeARecheckLeavesAGrantToAnotherAcquisitionOfTheOwner) {
  RedisServer server;
  FaultProxy proxy(server.port());
  // The recheck follows a lost reply after 500 ms: time for the release to come between.
  auto cfg = proxied(proxy, 3, 500ms);
  cfg.handoff = redisync::Handoff::grant;
  redisync::Client client(cfg);
  client.on_lock_lost([](const redisync::LockLostEvent&) {});
  redisync::Client holder(redisync::test::grant::grant_config(server));
  const auto name = unique_name("recheck-grant:");
  auto lock = client.lock(name);
  lock.lock();  // loads the scripts: the attempts are EVALSHA from now on
  lock.unlock();
  auto held = holder.lock(name);
  held.lock();
  const auto owner = redisync::Client::new_owner_id();
  const auto field = lock.owner_field(owner);
  auto count_on_server = [&] { return owner_count(server, name, field); };

  // The first acquisition waits, registered for a grant.
  auto waiting = lock.async_try_lock(owner, 20s, 20s, asio::use_future);
  const auto registrations = redisync::test::grant::lock_registrations(name);
  ASSERT_TRUE(wait_until(
      [&] { return !server.command({"ZSCORE", registrations, field}).is_nil(); }, 5s));
  // Its grant message will come 2 s late. The second acquisition's attempt is refused and
  // its reply lost (the connection is reset).
  proxy.set_subscriber_delay(2000ms);
  proxy.drop_reply(RequestMatch{"EVALSHA", "", name}, 1, AfterDrop::reset);
  auto second = lock.async_try_lock(owner, 20s, 20s, asio::use_future);
  ASSERT_TRUE(wait_until([&] { return proxy.stats().dropped_replies == 1; }, 5s));
  ASSERT_EQ(count_on_server(), "none");
  held.unlock();  // grants the lock to the first acquisition
  ASSERT_EQ(count_on_server(), "1");

  ASSERT_TRUE(second.get());  // its recheck ran before the grant's message came
  ASSERT_TRUE(waiting.get());
  proxy.clear();
  EXPECT_EQ(count_on_server(), "2") << "two acquisitions reported, one hold on the server";
  lock.async_unlock(owner, asio::use_future).get();
  EXPECT_EQ(count_on_server(), "1") << "the first release ended a hold the owner still counts";
  lock.async_unlock(owner, asio::use_future).get();
  EXPECT_EQ(count_on_server(), "none");
}

TEST(RecheckFoundHold, GrantModeLocalDeadlineFollowsTheHoldFound) {
  found_hold_keeps_its_own_lease(redisync::Handoff::grant);
}

TEST(RecheckFoundHold, WakeModeLocalDeadlineFollowsTheHoldFound) {
  found_hold_keeps_its_own_lease(redisync::Handoff::wake);
}

}  // namespace
