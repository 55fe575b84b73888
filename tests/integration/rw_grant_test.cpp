// SPDX-License-Identifier: Apache-2.0
// Direct handoff for ReadWriteLock's write side (Config::handoff = grant, issue #19,
// docs/wire-format.md "Direct handoff") against a real server: a waiting writer registers in
// "redisync_rwlock_grant:TAG(N)"; a write release that frees the lock, or the release of the
// last read hold, grants it to the waiter (an ordinary write hold: mode = write, W = 1, on the
// short grant lease); a grant to a dead waiter frees within the grant lease; a waiter giving
// up (timeout, Client close) as it is granted never leaves the lock held by nobody; Redisson-
// layout waiters are never granted and are woken by Redisson's message. Readers never register.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <thread>

#include "grant_util.h"
#include "redisync/redisync.h"
#include "support/java_layout.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using namespace redisync::test;         // RedisServer, JavaLayoutClient, wait_until...
using namespace redisync::test::grant;  // grant_util.h

namespace {

std::string registrations(const std::string& name) {
  return "redisync_rwlock_grant:{" + name + "}";
}

bool registered_now(RedisServer& server, const std::string& name, const std::string& field) {
  return !server.command({"ZSCORE", registrations(name), field}).is_nil();
}

std::string hget(RedisServer& server, const std::string& name, const std::string& field) {
  auto r = server.command({"HGET", name, field});
  return r.is_nil() ? "" : r.as_string();
}

// What a granted waiter saw on the server right after its lock() returned.
struct Seen {
  bool got = false;
  std::string mode;
  std::string count;  // its W
  long long fields = 0;
  long long pttl = 0;
};

// A holder and a writer waiting on its own thread, both in grant mode with grant lease
// `lease`, on a fresh lock. The writer records what the server shows once it holds, and
// holds until finish().
struct Scene {
  RedisServer server;
  redisync::Client holder, waiter;
  std::string name;
  redisync::ReadWriteLock held;
  std::string field;  // the waiter's W
  std::atomic<bool> known{false};
  std::promise<void> release;
  std::future<Seen> done;

  explicit Scene(std::chrono::milliseconds lease)
      : holder(grant_config(server, lease)),
        waiter(grant_config(server, lease)),
        name(unique_name("rw-grant:")),
        held(holder.read_write_lock(name)) {}

  // Starts the waiting writer; true once it is registered for a grant.
  bool wait_registered() {
    done = std::async(std::launch::async, [this] {
      auto rw = waiter.read_write_lock(name);
      field = field_of(waiter) + ":write";
      known = true;
      Seen seen;
      seen.got = rw.try_lock_for(20s, 90s);  // fixed lease: longer than the grant lease
      if (seen.got) {
        seen.mode = hget(server, name, "mode");
        seen.count = hget(server, name, field);
        seen.fields = server.command({"HLEN", name}).as_integer();
        seen.pttl = server.command({"PTTL", name}).as_integer();
        release.get_future().wait();
        rw.unlock_checked();
      }
      return seen;
    });
    return wait_until([&] { return known.load() && registered_now(server, name, field); }, 5s);
  }
  // True once the waiter's W is in the hash (granted, or acquired).
  bool holds() {
    return wait_until([&] { return hget(server, name, field) == "1"; }, 5s);
  }
  // Lets the writer release, and what it saw.
  Seen finish() {
    release.set_value();
    EXPECT_EQ(done.wait_for(10s), std::future_status::ready);
    return done.get();
  }
};

// Exactly a Redisson write hold: mode = write and the owner's W = 1, nothing else; still on
// the grant lease (60 s: below the writer's 90 s lease, which an acquire of its own would set;
// a lease longer than the grant lease is set lazily, grant_steps.cpp).
void expect_granted_write_hold(const Seen& seen) {
  EXPECT_TRUE(seen.got);
  EXPECT_EQ(seen.mode, "write");
  EXPECT_EQ(seen.count, "1");
  EXPECT_EQ(seen.fields, 2);
  EXPECT_GT(seen.pttl, 0);
  EXPECT_LE(seen.pttl, 60000);
}

}  // namespace

TEST(RwGrantTest, AWriteReleaseGrantsTheLockToAWaitingWriter) {
  // The extension to the writer's 90 s lease is sent a third of the 60 s grant lease later.
  Scene s(60000ms);
  s.held.lock();
  ASSERT_TRUE(s.wait_registered());
  s.held.unlock_checked();
  ASSERT_TRUE(s.holds());
  expect_granted_write_hold(s.finish());
  EXPECT_EQ(s.server.command({"EXISTS", registrations(s.name)}).as_integer(), 0);
  EXPECT_EQ(s.server.command({"EXISTS", s.name}).as_integer(), 0);
}

TEST(RwGrantTest, TheLastReadersReleaseGrantsTheLockToAWaitingWriter) {
  Scene s(60000ms);
  redisync::Client other(grant_config(s.server, 60000ms));
  auto other_reader = other.read_write_lock(s.name);
  s.held.lock_shared();
  other_reader.lock_shared();
  ASSERT_TRUE(s.wait_registered());
  // One reader left: still read-held, nobody granted.
  s.held.unlock_shared_checked();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(hget(s.server, s.name, "mode"), "read");
  EXPECT_EQ(hget(s.server, s.name, s.field), "");
  EXPECT_TRUE(registered_now(s.server, s.name, s.field));
  // The last reader's release grants the writer.
  other_reader.unlock_shared_checked();
  ASSERT_TRUE(s.holds());
  expect_granted_write_hold(s.finish());
}

TEST(RwGrantTest, ADowngradedReleaseKeepsTheReadHoldAndGrantsOnlyWhenTheReadIsReleased) {
  Scene s(60000ms);
  s.held.lock();
  s.held.lock_shared();  // downgrade: write, then read, by the same thread
  ASSERT_TRUE(s.wait_registered());
  s.held.unlock_checked();  // the write hold: the lock stays, read-held by us
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(hget(s.server, s.name, "mode"), "read");
  EXPECT_EQ(hget(s.server, s.name, s.field), "");
  s.held.unlock_shared_checked();  // the last read hold: granted now
  ASSERT_TRUE(s.holds());
  expect_granted_write_hold(s.finish());
}

TEST(RwGrantTest, ReadersNeverRegisterAndWakeModeNeverGrants) {
  RedisServer server;
  redisync::Client grant_holder(grant_config(server, 60000ms));
  redisync::Client grant_reader(grant_config(server, 60000ms)), wake_writer(config_for(server));
  const auto name = unique_name("rw-grant:");
  auto held = grant_holder.read_write_lock(name);
  held.lock();
  auto reader = try_lock_async([&] { return grant_reader.read_write_lock(name).read_lock(); });
  auto writer = try_lock_async([&] { return wake_writer.read_write_lock(name); });
  ASSERT_TRUE(wait_until(
      [&] {
        auto r = server.command({"PUBSUB", "NUMSUB", JavaLayoutClient::rwlock_channel(name)});
        return r.elements[1].as_integer() >= 2;
      },
      5s));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(server.command({"EXISTS", registrations(name)}).as_integer(), 0);
  held.unlock();  // nobody registered: Redisson's message wakes both
  EXPECT_TRUE(reader.get());
  EXPECT_TRUE(writer.get());
}

TEST(RwGrantTest, AGrantToADeadWaiterFreesWithinTheGrantLease) {
  Scene s(300ms);
  s.held.lock();
  ASSERT_TRUE(s.wait_registered());
  // A registration of a writer that is gone, made before the live one's (first in order).
  const std::string dead = "0123dead-0000-0000-0000-000000000000:7:write";
  const long long now = server_ms(s.server);
  s.server.command({"ZADD", registrations(s.name), std::to_string(now - 1000), dead});
  s.server.command({"HSET", "redisync_rwlock_grant_id:{" + s.name + "}", dead,
                    "deadbeef:4:" + std::to_string(now + 5000)});
  s.held.unlock_checked();
  // The dead writer was granted: an ordinary write hold on the short grant lease.
  EXPECT_EQ(hget(s.server, s.name, dead), "1");
  EXPECT_EQ(hget(s.server, s.name, "mode"), "write");
  EXPECT_LE(s.server.command({"PTTL", s.name}).as_integer(), 300);
  // The live writer has it once the dead one's grant lease ran out.
  ASSERT_TRUE(s.holds());
  const Seen seen = s.finish();
  EXPECT_TRUE(seen.got);
  EXPECT_EQ(seen.mode, "write");
}

TEST(RwGrantTest, AWriterGivingUpAsItIsGrantedNeverLeavesTheLockHeldByNobody) {
  // Odd rounds: the lock is read-held, and the last reader's release grants.
  using RW = redisync::ReadWriteLock;
  give_up_as_granted_rounds(
      [](redisync::Client& c, const std::string& n) { return c.read_write_lock(n); },
      [](RW& rw, int round) { round % 2 ? rw.lock_shared() : rw.lock(); },
      [](RW& rw, int round) { round % 2 ? rw.unlock_shared_checked() : rw.unlock_checked(); },
      [](RedisServer& s, const std::string& n, const std::string& f) {
        return registered_now(s, n, f + ":write");
      });
}

TEST(RwGrantTest, AGrantedWriteHoldLastsItsOwnLeaseNotTheLongerGrantLease) {
  redisync::test::grant::granted_hold_lasts_its_own_lease(
      [](redisync::Client& c, const std::string& n) { return c.read_write_lock(n); },
      [](RedisServer& s, const std::string& n, const std::string& f) {
        return registered_now(s, n, f + ":write");
      });
}

TEST(RwGrantTest, TheReleasersShorterGrantLeaseBoundsTheGrantedWriteHold) {
  releasers_grant_lease_bounds_the_granted_hold(
      [](redisync::Client& c, const std::string& n) { return c.read_write_lock(n); },
      [](redisync::ReadWriteLock& l) { return l.write_lock(); },
      [](RedisServer& s, const std::string& n, const std::string& f) {
        return registered_now(s, n, f);
      },
      ":write");
}

TEST(RwGrantTest, AGrantTakenByAnAttemptLastsItsOwnLease) {
  redisync::test::grant::grant_taken_by_attempt_lasts_its_own_lease(
      [](redisync::Client& c, const std::string& n) { return c.read_write_lock(n); },
      "redisync_rwlock_grant:", ":write", {"mode", "write"});
}

TEST(RwGrantTest, ClosingAClientRemovesTheRegistrationOfItsWaitingWriter) {
  close_mid_wait([](redisync::Client& c, const std::string& n) { return c.read_write_lock(n); },
                 [](RedisServer& s, const std::string& n, const std::string& f) {
                   return registered_now(s, n, f + ":write");
                 },
                 [](const std::string& n, const std::string&) {
                   return JavaLayoutClient::rwlock_channel(n);
                 },
                 "1");  // Redisson's write release message
}

TEST(RwGrantTest, RedissonLayoutWaitersAreNeverGrantedAndAreWokenByRedissonsMessage) {
  Scene s(2000ms);
  JavaLayoutClient java(s.server);
  s.held.lock();
  // Java waiters, a writer and a reader: they attempted (PTTL) and listen on Redisson's channel.
  ChannelListener java_ear(s.server, JavaLayoutClient::rwlock_channel(s.name));
  ASSERT_FALSE(java.write_acquire(s.name, 30000, 5).is_nil());
  ASSERT_FALSE(java.read_acquire(s.name, 30000, 6).is_nil());
  ASSERT_TRUE(s.wait_registered());
  s.held.unlock_checked();
  ASSERT_TRUE(s.holds());
  EXPECT_EQ(hget(s.server, s.name, java.writer(5)), "");
  // Java still excluded on both sides.
  EXPECT_FALSE(java.write_acquire(s.name, 30000, 5).is_nil());
  EXPECT_FALSE(java.read_acquire(s.name, 30000, 6).is_nil());
  EXPECT_TRUE(s.finish().got);
  // The grant published nothing on Redisson's channel; our release, with nobody registered,
  // published Redisson's write release message, and Java gets the lock.
  EXPECT_EQ(java_ear.next_message(5s), "1");
  EXPECT_TRUE(java.write_acquire(s.name, 30000, 5).is_nil());
  EXPECT_EQ(java.write_release(s.name, 5, 30000).as_integer(), 1);
  EXPECT_TRUE(java.read_acquire(s.name, 30000, 6).is_nil());
  EXPECT_EQ(java.read_release(s.name, 6).as_integer(), 1);
}

TEST(RwGrantTest, AJavaReleaseWakesARegisteredWriterWhichAcquiresAndLeavesTheRegistrations) {
  Scene s(60000ms);
  JavaLayoutClient java(s.server);
  ASSERT_TRUE(java.write_acquire(s.name, 30000, 5).is_nil());
  ASSERT_TRUE(s.wait_registered());
  EXPECT_EQ(java.write_release(s.name, 5, 30000).as_integer(), 1);  // Redisson's: publishes "1"
  ASSERT_TRUE(s.holds());
  const Seen seen = s.finish();
  EXPECT_TRUE(seen.got);
  EXPECT_EQ(seen.mode, "write");
  EXPECT_EQ(seen.count, "1");
  EXPECT_GT(seen.pttl, 60000);  // its own acquire: its 90 s lease, not the 60 s grant lease
  EXPECT_EQ(s.server.command({"EXISTS", registrations(s.name)}).as_integer(), 0);
}
