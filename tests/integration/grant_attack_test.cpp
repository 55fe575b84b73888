// SPDX-License-Identifier: Apache-2.0
// Adversarial tests of the direct handoff (Config::handoff = grant; docs/wire-format.md
// "Direct handoff"): races of the grant machinery with network faults, late copies of steps
// and stale messages, each checked against the promises of docs/safety.md (never two holders;
// the holder is told no later than the moment it may have lost the lock).
//
// The first four holes (a resent give-up, two acquisitions of one owner, a late copy of an
// attempt, a late grant message) came from one gap: the server could not tell a grant from a
// hold of the same owner, nor the client a stale grant from a fresh one. The grant mark, the
// acquisition's grant id and its attempt numbers close it (sync/acquire/grant.h).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include <asio/use_future.hpp>

#include "redisync/redisync.h"
#include "grant_util.h"
#include "support/fault_proxy.h"
#include "support/redis_server.h"
#include "support/replication.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::Direction;
using redisync::test::FaultProxy;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;
using redisync::test::grant::field_of;
using redisync::test::grant::grant_config;
using redisync::test::grant::lock_registrations;

namespace {

// Watches a hold for `span`: at no moment may its field be gone from the lock on the server
// while its holder has not been told (lost_by_current_thread()). Returns the violation, or "".
template <class Lock>
std::string watch_hold(RedisServer& server, Lock& lock, const std::string& name,
                       const std::string& field, std::chrono::milliseconds span) {
  const auto until = std::chrono::steady_clock::now() + span;
  while (std::chrono::steady_clock::now() < until) {
    const bool on_server = server.command({"HEXISTS", name, field}).as_integer() == 1;
    if (!on_server && !lock.lost_by_current_thread()) {
      return "the hold of " + field + " was gone on the server (lock: " +
             server.command({"HGETALL", name}).debug_string() + ") while its holder was not told";
    }
    std::this_thread::sleep_for(5ms);
  }
  return "";
}

}  // namespace

// A waiter's give-up step (lock_grant_give_up.lua) is resent after its connection dropped
// (Retry::always). Meanwhile the caller, told "not acquired", asks again with the same thread
// and takes the lock by an ordinary attempt on the new connection. The resent give-up then
// finds the owner's field in the lock, takes it for a grant given "meanwhile" and deletes the
// lock: the new holder holds a lock that is free on the server, and is not told.
TEST(GrantAttack, AResentGiveUpNeverReleasesTheSameOwnersLaterHold) {
  RedisServer server;
  FaultProxy proxy(server.port());
  auto cfg = redisync::Config::from_url(proxy.url());
  cfg.handoff = redisync::Handoff::grant;
  cfg.reconnection_delay_min = 20ms;
  cfg.reconnection_delay_max = 100ms;
  cfg.retry_interval = 1000ms;  // the give-up's resend comes 1 s after the drop
  redisync::Client holder(grant_config(server)), waiter(cfg);
  const auto name = unique_name("grant-attack:");
  auto held = holder.lock(name);
  held.lock();
  std::atomic<bool> registered{false}, first_over{false}, go_again{false};
  std::string field;
  std::atomic<bool> field_known{false};  // field is written before, read after
  auto done = std::async(std::launch::async, [&] {
    auto lock = waiter.lock(name);
    field = field_of(waiter);
    field_known = true;
    const bool first = lock.try_lock_for(600ms);
    first_over = true;
    if (first) return std::string("acquired on the first try (unexpected)");
    wait_until([&] { return go_again.load(); }, 10s);
    if (!lock.try_lock_for(5s)) return std::string("the second try did not acquire");
    std::string violation = watch_hold(server, lock, name, field, 2500ms);
    if (!lock.lost_by_current_thread()) lock.unlock();
    return violation;
  });
  ASSERT_TRUE(wait_until(
      [&] {
        return field_known.load() &&
               !server.command({"ZSCORE", lock_registrations(name), field}).is_nil();
      },
      5s));
  // The give-up runs on the server, but its reply is lost with the connection: the step
  // "may have been sent" and is resent in 1 s (Retry::always).
  proxy.drop_reply({.command = "EVALSHA", .arg_containing = "redisync_grant__channel"}, 1);
  ASSERT_TRUE(wait_until([&] { return first_over.load(); }, 5s));
  ASSERT_TRUE(wait_until([&] { return proxy.stats().dropped_replies == 1; }, 5s));
  held.unlock();  // the registration is gone with the give-up: nobody is granted it
  ASSERT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
  go_again = true;
  ASSERT_EQ(done.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(done.get(), "");
}

// Two acquisitions of one owner (the async API's explicit owner id) under way at once on a
// free lock. In wake mode the second is a re-entry (count 2). In grant mode both attempts say
// "fresh" (the flag is decided once, when the loop starts, with no hold counted yet), so the
// second finds the first's field and takes it for a grant: it sets the count to 1 instead of
// 2. The client counts two holds; one release then deletes the lock on the server while the
// client still counts one hold and is not told.
namespace {

// Two async acquisitions of one owner at once, then one release: the other hold must still be
// on the server (or its holder told). Returns what went wrong, or "".
std::string two_acquisitions_one_release(RedisServer& server, redisync::Config cfg) {
  redisync::Client client(cfg);
  const auto name = unique_name("grant-attack:");
  auto lock = client.lock(name);
  const auto owner = redisync::Client::new_owner_id();
  auto first = lock.async_lock(owner, 30s, asio::use_future);
  auto second = lock.async_lock(owner, 30s, asio::use_future);
  first.get();
  second.get();
  const std::string field = lock.owner_field(owner);
  std::string out;
  const auto count = server.command({"HGET", name, field});
  if (count.is_nil() || count.as_string() != "2") {
    out = "two holds counted by the client, the server counts " +
          server.command({"HGETALL", name}).debug_string() + "; ";
  }
  lock.async_unlock(owner, asio::use_future).get();  // one of the two holds
  const bool on_server = server.command({"HEXISTS", name, field}).as_integer() == 1;
  if (!on_server && !lock.lost(owner)) {
    out += "after one of two releases the lock is free on the server while the client still "
           "counts a hold and was not told";
  }
  try {
    lock.async_unlock(owner, asio::use_future).get();
  } catch (const std::exception&) {
  }
  return out;
}

}  // namespace

// Two acquisitions of one owner (the async API's explicit owner id) under way at once on a
// free lock. In wake mode the second is a re-entry (count 2). In grant mode both attempts say
// "fresh" (the flag is decided once, when the loop starts, with no hold counted yet), so the
// second finds the first's field and takes it for a grant: it sets the count to 1 instead of
// 2. The client counts two holds; one release then deletes the lock on the server while the
// client still counts one hold and is not told.
TEST(GrantAttack, TwoConcurrentAcquisitionsOfOneOwnerCountTwoHoldsOnTheServer) {
  RedisServer server;
  auto wake = grant_config(server);
  wake.handoff = redisync::Handoff::wake;
  EXPECT_EQ(two_acquisitions_one_release(server, wake), "") << "wake mode";
  EXPECT_EQ(two_acquisitions_one_release(server, grant_config(server)), "") << "grant mode";
}

// A grant message completes a waiting lock() while its last attempt is still on its way (here:
// held up in the network, as behind a partition; TCP delivers it later). That copy says
// "fresh" and arrives after the owner released the granted hold and took the lock again with
// a 30 s watchdog lease: it finds the owner's field, takes it for a grant and sets the lock's
// expiry to its own 5 s lease. The hold ends on the server after 5 s; its holder, whose next
// renewal is 10 s away, is not told. (Fixed by the grant mark: the late copy's acquisition is
// not the one the mark names, so it sees a hold.)
TEST(GrantAttack, ALateCopyOfAnAttemptNeverShortensTheOwnersLaterHold) {
  RedisServer server;
  FaultProxy proxy(server.port());
  auto cfg = redisync::Config::from_url(proxy.url());
  cfg.handoff = redisync::Handoff::grant;
  cfg.timeout = 500ms;  // a stalled connection is given up soon (the release's timeout)
  cfg.retry_interval = 100ms;  // and the steps behind the withheld attempt are sent again soon
  cfg.reconnection_delay_min = 20ms;
  cfg.reconnection_delay_max = 100ms;
  redisync::Client holder(grant_config(server)), waiter(cfg);
  const auto name = unique_name("grant-attack:");
  auto held = holder.lock(name);
  held.lock();
  std::string field;
  std::atomic<bool> field_known{false};  // field is written before, read after
  std::atomic<bool> granted{false}, deliver{false}, delivered{false};
  auto done = std::async(std::launch::async, [&] {
    auto lock = waiter.lock(name);
    field = field_of(waiter);
    field_known = true;
    // A 5 s lease: it outlives the stalled connection (its extension and release wait for
    // the 500 ms timeout); the late attempt would set it on the later 30 s hold.
    if (!lock.try_lock_for(20s, 5s)) return std::string("not granted");
    granted = true;
    try {
      lock.unlock_checked();
    } catch (const std::exception& e) {
      return std::string("the granted hold's release failed: ") + e.what();
    }
    lock.lock();  // watchdog lease, 30 s, renewed every 10 s
    deliver = true;
    wait_until([&] { return delivered.load(); }, 10s);
    // Watched past the late copy's 5 s.
    std::string violation = watch_hold(server, lock, name, field, 6000ms);
    if (!lock.lost_by_current_thread()) lock.unlock();
    return violation;
  });
  ASSERT_TRUE(wait_until(
      [&] {
        return field_known.load() &&
               !server.command({"ZSCORE", lock_registrations(name), field}).is_nil();
      },
      5s));
  // The waiter's next attempt (due within a third of the 2 s grant lease) is held up.
  proxy.withhold_request({.command = "EVALSHA", .arg_containing = "redisync_lock_grant"}, 1);
  ASSERT_TRUE(wait_until([&] { return proxy.stats().withheld == 1; }, 5s));
  held.unlock();  // grants the lock to the waiter; the message comes on its pub/sub connection
  ASSERT_TRUE(wait_until([&] { return granted.load(); }, 5s));
  if (!wait_until([&] { return deliver.load(); }, 10s)) {
    FAIL() << "the waiter did not take the lock again: "
           << (done.wait_for(15s) == std::future_status::ready ? done.get()
                                                               : std::string("still waiting"));
  }
  const auto late = proxy.withheld();
  ASSERT_EQ(late.size(), 1u);
  const auto reply = server.command(late[0]);  // the attempt arrives at last
  delivered = true;
  ASSERT_EQ(done.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(done.get(), "") << "the late attempt answered " << reply.debug_string();
}

// A key of another type where grant mode keeps its own data (a string at the registrations,
// their ids or the grant mark of N): in grant mode the acquire of a free lock wrote the hold
// and then failed at ZREM (WRONGTYPE), so lock() threw while the server held the lock for the
// owner for a whole lease with nobody counting it; a release would fail the same way. Grant
// mode must step aside for such a lock instead: lock, a waiter woken by the release, and the
// releases all work, and nothing is left held.
namespace {

// Locks and unlocks `lock_of(c, name)` with a waiter on another client of `cfg`, after `spoil`
// put foreign data at grant keys of `name`. Returns what went wrong, or "".
template <class LockOf>
std::string works_beside_foreign_keys(RedisServer& server, LockOf lock_of,
                                      const std::vector<std::string>& spoiled) {
  redisync::Client holder(grant_config(server)), waiter(grant_config(server));
  const auto name = unique_name("grant-attack:");
  for (const auto& key : spoiled) {  // a list: of another type than any grant key
    server.command({"RPUSH", key + "{" + name + "}", "not what redisync writes"});
  }
  std::string out;
  auto held = lock_of(holder, name);
  try {
    held.lock();
  } catch (const std::exception& e) {
    return std::string("lock() failed: ") + e.what();
  }
  auto done = std::async(std::launch::async, [&] {
    auto lock = lock_of(waiter, name);
    if (!lock.try_lock_for(10s)) return false;
    lock.unlock();
    return true;
  });
  std::this_thread::sleep_for(200ms);  // the waiter waits
  held.unlock();
  if (done.wait_for(15s) != std::future_status::ready || !done.get()) {
    out += "the waiter did not get the lock after the release; ";
  }
  if (!wait_until([&] { return server.command({"EXISTS", name}).as_integer() == 0; }, 2s)) {
    out += "the lock stayed held: " + server.command({"HGETALL", name}).debug_string();
  }
  // Foreign data is left as it was; only the grant mark, a string redisync SETs whatever is
  // there, is not kept (the grant mode of this lock cannot grant anyway).
  for (const auto& key : spoiled) {
    if (key == "redisync_grant_mark:") continue;
    if (server.command({"LLEN", key + "{" + name + "}"}).as_integer() != 1) {
      out += key + " was changed; ";
    }
  }
  return out;
}

}  // namespace

TEST(GrantAttack, ForeignDataAtTheGrantKeysNeverBreaksTheLock) {
  RedisServer server;
  const std::vector<std::string> lock_keys{"redisync_lock_grant:", "redisync_lock_grant_id:",
                                           "redisync_grant_mark:"};
  for (const auto& key : lock_keys) {
    EXPECT_EQ(works_beside_foreign_keys(
                  server, [](redisync::Client& c, const std::string& n) { return c.lock(n); },
                  {key}),
              "")
        << "Lock, " << key;
    EXPECT_EQ(works_beside_foreign_keys(
                  server,
                  [](redisync::Client& c, const std::string& n) { return c.fenced_lock(n); },
                  {key}),
              "")
        << "FencedLock, " << key;
  }
  EXPECT_EQ(works_beside_foreign_keys(
                server, [](redisync::Client& c, const std::string& n) { return c.lock(n); },
                lock_keys),
            "")
      << "Lock, all three";
  for (const auto& key : {"redisync_rwlock_grant:", "redisync_rwlock_grant_id:",
                          "redisync_grant_mark:"}) {
    EXPECT_EQ(works_beside_foreign_keys(
                  server,
                  [](redisync::Client& c, const std::string& n) {
                    return c.read_write_lock(n).write_lock();
                  },
                  {key}),
              "")
        << "ReadWriteLock, " << key;
  }
  for (const auto& key : {"redisync_fair_grant:", "redisync_grant_mark:"}) {
    EXPECT_EQ(works_beside_foreign_keys(
                  server, [](redisync::Client& c, const std::string& n) { return c.fair_lock(n); },
                  {key}),
              "")
        << "FairLock, " << key;
  }
}

// With a replica and Config::check_lock_synced_slaves (the default), an acquire that no replica
// acknowledged is undone and retried (docs/safety.md "Replica acknowledgement": "a lock a
// caller holds has reached at least one replica"). A grant bypasses that: the grantee's lock()
// returns on the message, and nobody waits for a replica to have the grant (the releaser's
// WAIT fails, its release is resent and answered from its record; the grant stays). A failover
// to that replica then finds the lock still held by the releaser, or free.
namespace {

// A holder releases while the only replica is paused, with a waiter of `handoff` registered (in
// grant mode) or waiting: true when the waiter's lock() returned true meanwhile.
bool taken_while_replica_paused(redisync::Handoff handoff) {
  RedisServer master;
  RedisServer replica{redisync::test::ServerOptions{
      .extra_args = {"--replicaof", "127.0.0.1", std::to_string(master.port())}}};
  EXPECT_TRUE(redisync::test::replicas_streaming(master));
  auto cfg = grant_config(master);
  cfg.handoff = handoff;
  cfg.timeout = 2000ms;
  cfg.slaves_sync_timeout = 300ms;
  cfg.retry_attempts = 2;
  cfg.retry_interval = 100ms;
  redisync::Client holder(cfg), waiter(cfg);
  holder.execute({"PING"});
  waiter.execute({"PING"});
  const auto name = unique_name("grant-attack:");
  auto held = holder.lock(name);
  held.lock();
  std::string field;
  std::atomic<bool> field_known{false};  // field is written before, read after
  std::atomic<bool> paused{false};
  auto done = std::async(std::launch::async, [&] {
    auto lock = waiter.lock(name);
    field = field_of(waiter);
    field_known = true;
    bool got = false;
    try {
      got = lock.try_lock_for(3s);
    } catch (const std::exception&) {
    }
    // What matters is whether the replica had its hold while it was paused: it had nothing.
    const bool unacknowledged = got && paused.load();
    if (got) {
      try {
        lock.unlock();
      } catch (...) {
      }
    }
    return unacknowledged;
  });
  EXPECT_TRUE(wait_until([&] { return field_known.load(); }, 5s));
  if (handoff == redisync::Handoff::grant) {
    EXPECT_TRUE(wait_until(
        [&] {
          return !master.command({"ZSCORE", lock_registrations(name), field}).is_nil();
        },
        5s));
  } else {
    std::this_thread::sleep_for(200ms);  // the waiter subscribed and sleeps
  }
  replica.pause();
  paused = true;
  held.unlock();  // grants; its WAIT gets no acknowledgement
  EXPECT_EQ(done.wait_for(20s), std::future_status::ready);
  const bool unacknowledged = done.get();
  paused = false;
  replica.resume();
  return unacknowledged;
}

}  // namespace

TEST(GrantAttack, AGrantIsTakenOnlyOnceAReplicaAcknowledgedIt) {
  EXPECT_FALSE(taken_while_replica_paused(redisync::Handoff::wake))
      << "wake mode: the waiter's lock() returned true while the only replica was paused";
  EXPECT_FALSE(taken_while_replica_paused(redisync::Handoff::grant))
      << "grant mode: the grantee's lock() returned true while the only replica could not "
         "have its hold";
}

// The same with a replica that acknowledges: the grant is taken (by an attempt), and the
// replica has the grantee's hold by the time its lock() returns.
TEST(GrantAttack, AGrantWithAnAcknowledgingReplicaIsTakenAndReplicated) {
  RedisServer master;
  RedisServer replica{redisync::test::ServerOptions{
      .extra_args = {"--replicaof", "127.0.0.1", std::to_string(master.port())}}};
  ASSERT_TRUE(redisync::test::replicas_streaming(master));
  auto cfg = grant_config(master);
  cfg.slaves_sync_timeout = 1000ms;
  redisync::Client holder(cfg), waiter(cfg);
  holder.execute({"PING"});
  waiter.execute({"PING"});
  const auto name = unique_name("grant-attack:");
  auto held = holder.lock(name);
  held.lock();
  std::string field;
  std::atomic<bool> field_known{false};  // field is written before, read after
  auto done = std::async(std::launch::async, [&] {
    auto lock = waiter.lock(name);
    field = field_of(waiter);
    field_known = true;
    if (!lock.try_lock_for(10s)) return std::string("not acquired");
    std::string out;
    if (replica.command({"HEXISTS", name, field}).as_integer() != 1) {
      out = "the replica did not have the hold when lock() returned";
    }
    lock.unlock();
    return out;
  });
  ASSERT_TRUE(wait_until(
      [&] {
        return field_known.load() &&
               !master.command({"ZSCORE", lock_registrations(name), field}).is_nil();
      },
      5s));
  held.unlock();
  ASSERT_EQ(done.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(done.get(), "");
}

// A grant message that reaches the grantee late (its pub/sub connection is slow; the command
// connection is not) after the grant ran out on the server and another client took the lock.
// Meanwhile the grantee's own attempt failed: the lock was someone else's. The client counts
// the granted hold's lease from that attempt's send time ("a failed answered attempt ran
// before any grant"), which is false here: the attempt ran after the grant, which had expired.
// The grantee's lock() returns true while the other client holds the lock.
TEST(GrantAttack, ALateGrantMessageAfterTheGrantExpiredIsNotTaken) {
  RedisServer server;
  FaultProxy proxy(server.port());
  auto cfg = redisync::Config::from_url(proxy.url());
  cfg.handoff = redisync::Handoff::grant;
  cfg.grant_lease = 10500ms;  // the grantee re-attempts every 3.5 s while registered
  cfg.reconnection_delay_min = 20ms;
  cfg.reconnection_delay_max = 100ms;
  auto wake = redisync::test::config_for(server);
  wake.handoff = redisync::Handoff::wake;
  redisync::Client holder(grant_config(server, 3000ms)), waiter(cfg), other(wake);
  const auto name = unique_name("grant-attack:");
  auto held = holder.lock(name);
  held.lock();
  std::string field;
  std::atomic<bool> field_known{false};  // field is written before, read after
  auto done = std::async(std::launch::async, [&] {
    auto lock = waiter.lock(name);
    field = field_of(waiter);
    field_known = true;
    if (!lock.try_lock_for(12s, 20s)) return std::string("not acquired");
    std::string out;
    if (server.command({"HEXISTS", name, field}).as_integer() != 1 &&
        !lock.lost_by_current_thread()) {
      out = "lock() returned true, but the lock is " +
            server.command({"HGETALL", name}).debug_string() + " and the holder was not told";
    }
    if (!lock.lost_by_current_thread()) lock.unlock();
    return out;
  });
  ASSERT_TRUE(wait_until(
      [&] {
        return field_known.load() &&
               !server.command({"ZSCORE", lock_registrations(name), field}).is_nil();
      },
      5s));
  proxy.set_subscriber_delay(4000ms);  // from now on its messages come 4 s late
  held.unlock();  // grants the lock to the waiter with a 3 s grant lease
  const auto released = std::chrono::steady_clock::now();
  std::this_thread::sleep_until(released + 2800ms);
  auto mine = other.lock(name);
  ASSERT_TRUE(mine.try_lock_for(2s, 8s));  // the grant ran out unclaimed: the lock is free
  ASSERT_EQ(done.wait_for(15s), std::future_status::ready);
  EXPECT_EQ(done.get(), "");
  mine.unlock();
}
