// SPDX-License-Identifier: Apache-2.0
// Issue 17 item 4: ACL users without the rights redisync needs. A user without pub/sub rights
// (the default for a new user on Redis 7: resetchannels) had its release delete the lock and
// then fail at PUBLISH: the error came after the write, and waiters were never woken. Now each
// release step checks the publish right before any write and refuses, naming it; users
// without EVAL/EVALSHA or without write rights get a clean error and nothing is written.
#include <gtest/gtest.h>

#include <asio/use_future.hpp>
#include <chrono>
#include <future>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "grant_util.h"
#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

redisync::Config as_user(RedisServer& server, const std::string& user,
                         const std::vector<std::string>& rules) {
  auto cfg = redisync::Config::from_url(server.add_user(user, rules));
  cfg.timeout = 1000ms;
  cfg.retry_attempts = 1;
  cfg.retry_interval = 50ms;
  return cfg;
}

bool exists(RedisServer& server, const std::string& key) {
  return server.command({"EXISTS", key}).as_integer() == 1;
}

// `f` must fail with a redisync::Error whose text contains `needle`.
template <class F>
void fails_naming(const std::string& what, const std::string& needle, F f) {
  try {
    f();
    ADD_FAILURE() << what << ": expected an error naming '" << needle << "'";
  } catch (const redisync::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << what << ": " << e.what();
  }
}

}  // namespace

TEST(AclUsers, NoChannelRightsReleaseRefusesBeforeDeletingTheLock) {
  RedisServer server;
  // The acquire now refuses a user without the right (NoChannelRightsAcquireRefusesBeforeWriting):
  // the right is taken away while the lock is held, as an operator might.
  redisync::Client client(as_user(server, "nochan", {"~*", "&*", "+@all"}));
  auto check = [&](const std::string& label, auto& lock) {
    lock.lock(30s);
    ASSERT_EQ(server.command({"ACL", "SETUSER", "nochan", "resetchannels"}).as_string(), "OK");
    fails_naming(label, "NOPERM", [&] { lock.unlock_checked(); });
    EXPECT_TRUE(exists(server, lock.name())) << label << ": the release deleted before failing";
    fails_naming(label + " force", "NOPERM", [&] { lock.force_unlock(); });
    EXPECT_TRUE(exists(server, lock.name())) << label << ": force release deleted before failing";
    server.command({"DEL", lock.name()});
    ASSERT_EQ(server.command({"ACL", "SETUSER", "nochan", "&*"}).as_string(), "OK");
  };
  auto lock = client.lock(unique_name("lock:"));
  check("lock", lock);
  auto fair = client.fair_lock(unique_name("fair:"));
  check("fair", fair);
  auto fenced = client.fenced_lock(unique_name("fenced:"));
  check("fenced", fenced);
  auto rw = client.read_write_lock(unique_name("rw:"));
  auto write = rw.write_lock();
  check("write", write);
  auto read = rw.read_lock();
  check("read", read);

  // The spin lock needs no pub/sub: it works.
  ASSERT_EQ(server.command({"ACL", "SETUSER", "nochan", "resetchannels"}).as_string(), "OK");
  auto spin = client.spin_lock(unique_name("spin:"));
  spin.lock(30s);
  EXPECT_EQ(spin.release().outcome, redisync::ReleaseOutcome::released);

  // Semaphore and latch: the release / count-down refuses before changing the count.
  auto sem = client.semaphore(unique_name("sem:"));
  fails_naming("semaphore", "NOPERM", [&] { sem.release(); });
  EXPECT_EQ(sem.available_permits(), 0);
  auto latch = client.count_down_latch(unique_name("latch:"));
  server.command({"SET", latch.name(), "1"});
  fails_naming("latch", "NOPERM", [&] { latch.count_down(); });
  EXPECT_EQ(server.command({"GET", latch.name()}).as_string(), "1");
}

// Issue 23 item 3: the remaining publishing steps wrote first and then failed at the publish
// (a count set that no waiter heard of, a latch deleted without its message, expired permits
// reclaimed unannounced). Each now refuses before any write.
TEST(AclUsers, NoChannelRightsSettersRefuseBeforeWriting) {
  RedisServer server;
  redisync::Client client(as_user(server, "nochan", {"~*", "resetchannels", "+@all"}));
  auto sem = client.semaphore(unique_name("sem:"));
  fails_naming("semaphore try_set_permits", "NOPERM", [&] { (void)sem.try_set_permits(3); });
  fails_naming("semaphore try_set_permits ttl", "NOPERM",
               [&] { (void)sem.try_set_permits(3, 10s); });
  EXPECT_FALSE(exists(server, sem.name()));
  server.command({"SET", sem.name(), "1"});
  fails_naming("semaphore release_if_exists", "NOPERM", [&] { (void)sem.release_if_exists(2); });
  EXPECT_EQ(server.command({"GET", sem.name()}).as_string(), "1");

  auto latch = client.count_down_latch(unique_name("latch:"));
  fails_naming("latch try_set_count", "NOPERM", [&] { (void)latch.try_set_count(2); });
  EXPECT_FALSE(exists(server, latch.name()));
  server.command({"SET", latch.name(), "2"});
  fails_naming("latch remove", "NOPERM", [&] { (void)latch.remove(); });
  EXPECT_EQ(server.command({"GET", latch.name()}).as_string(), "2");

  // Permit-expirable semaphore: one expired permit waits to be reclaimed (its reclaim
  // publishes); every step that would reclaim or publish refuses and leaves it.
  auto pes = client.permit_expirable_semaphore(unique_name("pes:"));
  const std::string zset = "{" + pes.name() + "}:timeout";
  const std::string expired(16, 'x');
  const std::string held_hex(32, 'a');
  const std::string held(16, '\xaa');
  auto reset = [&] {
    server.command({"SET", pes.name(), "0"});
    server.command({"DEL", zset});
    server.command({"ZADD", zset, "1", expired});
    server.command({"ZADD", zset, "922337203685477", held});
  };
  auto unchanged = [&](const std::string& label) {
    EXPECT_EQ(server.command({"GET", pes.name()}).as_string(), "0") << label;
    EXPECT_EQ(server.command({"ZCARD", zset}).as_integer(), 2) << label;
    EXPECT_FALSE(server.command({"ZSCORE", zset, expired}).is_nil()) << label;
  };
  const std::vector<std::pair<std::string, std::function<void()>>> steps{
      {"pes try_acquire", [&] { (void)pes.try_acquire(); }},
      {"pes available_permits", [&] { (void)pes.available_permits(); }},
      {"pes update_lease", [&] { (void)pes.update_lease(held_hex, 10s); }},
      {"pes remaining_lease", [&] { (void)pes.remaining_lease(held_hex); }},
      {"pes set_permits", [&] { pes.set_permits(5); }},
      {"pes add_permits", [&] { pes.add_permits(1); }},
      {"pes release", [&] { pes.release(held_hex); }},
      {"pes release several", [&] { pes.release(std::vector<std::string>{held_hex}); }},
  };
  for (const auto& [label, step] : steps) {
    reset();
    fails_naming(label, "NOPERM", step);
    unchanged(label);
  }
  server.command({"DEL", pes.name(), zset});
  fails_naming("pes try_set_permits", "NOPERM", [&] { (void)pes.try_set_permits(2); });
  EXPECT_FALSE(exists(server, pes.name()));
}

TEST(AclUsers, ChannelsButNoScriptsFailsCleanlyAndWritesNothing) {
  RedisServer server;
  redisync::Client client(
      as_user(server, "noeval", {"~*", "&*", "+@all", "-eval", "-evalsha", "-script"}));
  auto lock = client.lock(unique_name("lock:"));
  fails_naming("lock", "NOPERM", [&] { (void)lock.try_lock(); });
  auto fair = client.fair_lock(unique_name("fair:"));
  fails_naming("fair", "NOPERM", [&] { (void)fair.try_lock(); });
  auto sem = client.semaphore(unique_name("sem:"));
  fails_naming("semaphore", "NOPERM", [&] { sem.release(); });
  EXPECT_EQ(server.command({"DBSIZE"}).as_integer(), 0);
}

TEST(AclUsers, ReadOnlyUserFailsCleanlyAndWritesNothing) {
  RedisServer server;
  redisync::Client client(
      as_user(server, "reader", {"~*", "&*", "+@read", "+@connection", "+eval", "+evalsha",
                                 "+script"}));
  // No PUBLISH either (not a @read command): the acquire's publish check refuses first
  // (NoChannelRightsAcquireRefusesBeforeWriting); before it, the first write failed.
  auto lock = client.lock(unique_name("lock:"));
  fails_naming("lock", "NOPERM", [&] { (void)lock.try_lock(); });
  auto fair = client.fair_lock(unique_name("fair:"));
  fails_naming("fair", "NOPERM", [&] { (void)fair.try_lock_for(200ms); });
  auto rw = client.read_write_lock(unique_name("rw:"));
  fails_naming("read", "NOPERM", [&] { (void)rw.try_lock_shared(); });
  auto sem = client.semaphore(unique_name("sem:"));
  fails_naming("semaphore", "NOPERM", [&] { sem.release(); });
  EXPECT_EQ(server.command({"DBSIZE"}).as_integer(), 0);
}

// A fair lock's release publishes to the head waiter's channel, but checked only the caller's
// own: a user allowed its own channels and not the waiter's deleted the lock, then failed at
// the publish, and the waiter was not woken.
TEST(AclUsers, FairReleaseAllowedOnlyItsOwnChannelDeletesThenFailsToWakeTheHead) {
  RedisServer server;
  redisync::Client mine(as_user(server, "ownchan", {"~*", "resetchannels", "+@all"}));
  const std::string name = unique_name("fair:");
  const std::string channel = "redisson_lock__channel:{" + name + "}";
  ASSERT_EQ(server.command({"ACL", "SETUSER", "ownchan", "&" + channel + ":" + mine.id() + ":*"})
                .as_string(),
            "OK");
  redisync::Client other(redisync::Config::from_url(server.url()));
  auto lock = mine.fair_lock(name);
  lock.lock(30s);
  auto waiting = other.fair_lock(name).async_try_lock(redisync::Client::new_owner_id(), 10s, 30s,
                                                      asio::use_future);
  ASSERT_TRUE(wait_until(
      [&] {
        return server.command({"LLEN", "redisson_lock_queue:{" + name + "}"}).as_integer() == 1;
      },
      5s, 10ms));
  fails_naming("fair", "NOPERM", [&] { lock.unlock_checked(); });
  EXPECT_TRUE(exists(server, name)) << "the release deleted the lock before failing";
  server.command({"DEL", name});  // let the waiter in
  ASSERT_EQ(waiting.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(waiting.get());
}

// Issue 17 item 4, the acquire side: a user who may write but not publish got the lock (or the
// permits), and only its release failed; the lock then stayed taken until its lease ended and
// its waiters were never woken. Every acquire whose release publishes now checks the right
// to publish on the channel that release uses, before anything is written, and refuses naming
// the command and the channel. The spin lock, whose release does not publish, still works.
TEST(AclUsers, NoChannelRightsAcquireRefusesBeforeWriting) {
  RedisServer server;
  redisync::Client client(as_user(server, "nochan", {"~*", "resetchannels", "+@all"}));
  const long long keys_before = server.command({"DBSIZE"}).as_integer();
  auto refused = [&](const std::string& label, const std::string& channel, auto f) {
    fails_naming(label, "NOPERM", f);
    fails_naming(label, "PUBLISH", f);
    fails_naming(label, channel, f);
    EXPECT_EQ(server.command({"DBSIZE"}).as_integer(), keys_before) << label << ": wrote";
  };
  const std::string lock_name = unique_name("lock:");
  auto lock = client.lock(lock_name);
  const std::string lock_channel = "redisson_lock__channel:{" + lock_name + "}";
  refused("lock try_lock", lock_channel, [&] { (void)lock.try_lock(); });
  refused("lock lock(lease)", lock_channel, [&] { lock.lock(30s); });
  refused("lock async", lock_channel, [&] {
    lock.async_try_lock(redisync::Client::new_owner_id(), 0ms, 30s, asio::use_future).get();
  });
  auto nr = client.non_reentrant_lock(unique_name("nr:"));
  refused("non-reentrant lock", "redisson_lock__channel:{" + nr.name() + "}",
          [&] { (void)nr.try_lock(); });
  auto fenced = client.fenced_lock(unique_name("fenced:"));
  refused("fenced", "redisson_lock__channel:{" + fenced.name() + "}",
          [&] { (void)fenced.try_lock(); });
  auto fair = client.fair_lock(unique_name("fair:"));
  refused("fair", "redisson_lock__channel:{" + fair.name() + "}:" + client.id(),
          [&] { (void)fair.try_lock(); });
  auto rw = client.read_write_lock(unique_name("rw:"));
  auto write = rw.write_lock();
  refused("write", "redisson_rwlock:{" + rw.name() + "}", [&] { (void)write.try_lock(); });
  auto read = rw.read_lock();
  refused("read", "redisson_rwlock:{" + rw.name() + "}", [&] { (void)read.try_lock(); });

  // Semaphores: permits there to take; the count stays.
  auto sem = client.semaphore(unique_name("sem:"));
  server.command({"SET", sem.name(), "2"});
  const long long with_sem = server.command({"DBSIZE"}).as_integer();
  fails_naming("semaphore", "NOPERM", [&] { (void)sem.try_acquire(); });
  fails_naming("semaphore", "redisson_sc:{" + sem.name() + "}", [&] { (void)sem.try_acquire(); });
  EXPECT_EQ(server.command({"GET", sem.name()}).as_string(), "2");
  EXPECT_EQ(server.command({"DBSIZE"}).as_integer(), with_sem) << "semaphore: wrote";
  auto pes = client.permit_expirable_semaphore(unique_name("pes:"));
  server.command({"SET", pes.name(), "2"});
  const long long with_pes = server.command({"DBSIZE"}).as_integer();
  fails_naming("pes", "NOPERM", [&] { (void)pes.try_acquire(); });
  fails_naming("pes", "redisson_sc:{" + pes.name() + "}", [&] { (void)pes.try_acquire_for(0ms, 10s); });
  EXPECT_EQ(server.command({"GET", pes.name()}).as_string(), "2");
  EXPECT_EQ(server.command({"DBSIZE"}).as_integer(), with_pes) << "pes: wrote";

  // The spin lock needs no pub/sub: it works.
  auto spin = client.spin_lock(unique_name("spin:"));
  ASSERT_TRUE(spin.try_lock());
  EXPECT_EQ(spin.release().outcome, redisync::ReleaseOutcome::released);
}

// A ReadWriteLock release in grant mode (docs/wire-format.md §18 "ReadWriteLock") may publish
// on the grant channel of the earliest registered writer: a user allowed Redisson's channel
// but not that one is refused before the release deletes or grants anything. (Such a user's
// grant-mode acquire is refused now, GrantModeAcquireChecksTheGrantChannelBeforeWriting: the
// grant channels are taken away while the lock is held, as an operator might.)
TEST(AclUsers, RwGrantReleaseChecksTheGrantChannelBeforeWriting) {
  RedisServer server;
  auto cfg = as_user(server, "rwonly",
                     {"~*", "&redisson_rwlock:*", "&redisync_grant__channel:*", "+@all"});
  cfg.handoff = redisync::Handoff::grant;
  redisync::Client holder(cfg);
  auto waiter_cfg = redisync::Config::from_url(server.url());
  waiter_cfg.handoff = redisync::Handoff::grant;
  redisync::Client waiter(waiter_cfg);
  const auto name = unique_name("rw-grant-acl:");
  auto rw = holder.read_write_lock(name);
  rw.lock(30s);
  ASSERT_EQ(server.command({"ACL", "SETUSER", "rwonly", "resetchannels", "&redisson_rwlock:*"})
                .as_string(),
            "OK");
  auto done = redisync::test::grant::try_lock_async([&] { return waiter.read_write_lock(name); });
  const std::string registrations = "redisync_rwlock_grant:{" + name + "}";
  ASSERT_TRUE(wait_until(
      [&] { return server.command({"ZCARD", registrations}).as_integer() == 1; }, 5s));
  fails_naming("rw grant release", "NOPERM", [&] { rw.unlock_checked(); });
  const std::string ours =
      holder.id() + ":" + std::to_string(redisync::Client::current_thread_id()) + ":write";
  EXPECT_EQ(server.command({"HLEN", name}).as_integer(), 2);  // mode and our W: nothing granted
  EXPECT_FALSE(server.command({"HGET", name, ours}).is_nil());
  EXPECT_EQ(server.command({"ZCARD", registrations}).as_integer(), 1);
  // Redisson's channel is allowed: the force release wakes the writer, which acquires.
  EXPECT_TRUE(rw.write_lock().force_unlock());
  EXPECT_TRUE(done.get());
}

// The same for Lock: its grant-mode release looks the grantee up once and checks only the
// channel it will publish on, the grantee's, so a user allowed Redisson's lock channel alone
// is refused before the release deletes or grants anything (the rights taken away while the
// lock is held, as above).
TEST(AclUsers, LockGrantReleaseChecksTheGranteeChannelBeforeWriting) {
  RedisServer server;
  auto cfg = as_user(server, "lockonly",
                     {"~*", "&redisson_lock__channel:*", "&redisync_grant__channel:*", "+@all"});
  cfg.handoff = redisync::Handoff::grant;
  redisync::Client holder(cfg);
  auto waiter_cfg = redisync::Config::from_url(server.url());
  waiter_cfg.handoff = redisync::Handoff::grant;
  redisync::Client waiter(waiter_cfg);
  const auto name = unique_name("lock-grant-acl:");
  auto lock = holder.lock(name);
  lock.lock(30s);
  ASSERT_EQ(server.command({"ACL", "SETUSER", "lockonly", "resetchannels",
                            "&redisson_lock__channel:*"})
                .as_string(),
            "OK");
  auto done = redisync::test::grant::try_lock_async([&] { return waiter.lock(name); });
  const std::string registrations = redisync::test::grant::lock_registrations(name);
  ASSERT_TRUE(wait_until(
      [&] { return server.command({"ZCARD", registrations}).as_integer() == 1; }, 5s));
  fails_naming("lock grant release", "redisync_grant__channel", [&] { lock.unlock_checked(); });
  const std::string ours =
      holder.id() + ":" + std::to_string(redisync::Client::current_thread_id());
  EXPECT_EQ(server.command({"HLEN", name}).as_integer(), 1);  // still ours: nothing granted
  EXPECT_FALSE(server.command({"HGET", name, ours}).is_nil());
  EXPECT_EQ(server.command({"ZCARD", registrations}).as_integer(), 1);
  // Redisson's channel is allowed: the force release wakes the waiter, which acquires.
  EXPECT_TRUE(lock.force_unlock());
  EXPECT_TRUE(done.get());
}

// FairLock's grant-mode release checks, before any write, every queued waiter's own channel
// and the grant channel of each registered one (which waiter heads the queue is known only
// after the dead heads are dropped, a write). The rights are taken away while the lock is held,
// as above.
TEST(AclUsers, FairGrantReleaseChecksTheGrantChannelsBeforeWriting) {
  RedisServer server;
  auto cfg = as_user(server, "faironly",
                     {"~*", "&redisson_lock__channel:*", "&redisync_grant__channel:*", "+@all"});
  cfg.handoff = redisync::Handoff::grant;
  redisync::Client holder(cfg);
  auto waiter_cfg = redisync::Config::from_url(server.url());
  waiter_cfg.handoff = redisync::Handoff::grant;
  redisync::Client waiter(waiter_cfg);
  const auto name = unique_name("fair-grant-acl:");
  auto lock = holder.fair_lock(name);
  lock.lock(30s);
  ASSERT_EQ(server.command({"ACL", "SETUSER", "faironly", "resetchannels",
                            "&redisson_lock__channel:*"})
                .as_string(),
            "OK");
  auto done = redisync::test::grant::try_lock_async([&] { return waiter.fair_lock(name); });
  const std::string registrations = redisync::test::grant::fair_registrations(name);
  const std::string queue = "redisson_lock_queue:{" + name + "}";
  ASSERT_TRUE(wait_until(
      [&] { return server.command({"HLEN", registrations}).as_integer() == 1; }, 5s));
  fails_naming("fair grant release", "redisync_grant__channel", [&] { lock.unlock_checked(); });
  const std::string ours =
      holder.id() + ":" + std::to_string(redisync::Client::current_thread_id());
  EXPECT_EQ(server.command({"HLEN", name}).as_integer(), 1);  // still ours: nothing granted
  EXPECT_FALSE(server.command({"HGET", name, ours}).is_nil());
  EXPECT_EQ(server.command({"LLEN", queue}).as_integer(), 1);
  EXPECT_EQ(server.command({"HLEN", registrations}).as_integer(), 1);
  // Redisson's channels are allowed: the force release wakes the head, which acquires.
  EXPECT_TRUE(lock.force_unlock());
  EXPECT_TRUE(done.get());
}

// Issue 36 item 5: in grant mode a release that finds a registered waiter publishes on that
// waiter's client's grant channel, not on the lock channel the acquire checked. A user allowed
// the lock channel alone took the lock, and while a grant waiter stayed registered each of its
// releases was refused (the tests above): the lock stayed held, its lease renewed, with the
// waiter stuck behind it. The grant-mode acquire now checks the grant channel too and refuses
// before anything is written. Should a kind acquire anyway, the holder must still be able to
// release it with a grant waiter registered.
TEST(AclUsers, GrantModeAcquireChecksTheGrantChannelBeforeWriting) {
  RedisServer server;
  auto cfg = as_user(server, "lockchan",
                     {"~*", "&redisson_lock__channel:*", "&redisson_rwlock:*", "+@all"});
  cfg.handoff = redisync::Handoff::grant;
  redisync::Client holder(cfg);
  auto waiter_cfg = redisync::Config::from_url(server.url());
  waiter_cfg.handoff = redisync::Handoff::grant;
  redisync::Client waiter(waiter_cfg);
  // `lock`: the holder's; `waiter_lock()`: the same lock of `waiter` (try_lock_async);
  // `registered()`: whether a grant waiter is registered on it.
  auto check = [&](const std::string& label, auto& lock, auto waiter_lock, auto registered) {
    const long long keys_before = server.command({"DBSIZE"}).as_integer();
    const std::string grant_channel = "redisync_grant__channel:{" + lock.name() + "}";
    bool refused = false;
    try {
      lock.lock(30s);
    } catch (const redisync::Error& e) {
      refused = true;
      EXPECT_NE(std::string(e.what()).find("NOPERM"), std::string::npos) << label << e.what();
      EXPECT_NE(std::string(e.what()).find(grant_channel), std::string::npos)
          << label << ": " << e.what();
    }
    EXPECT_TRUE(refused) << label
                         << ": acquired a lock whose grant-mode release this user may not publish";
    EXPECT_EQ(server.command({"DBSIZE"}).as_integer(), keys_before) << label << ": wrote";
    if (refused) return;
    // Acquired: with a grant waiter registered, its holder must still be able to release it.
    auto done = redisync::test::grant::try_lock_async(waiter_lock);
    ASSERT_TRUE(wait_until(registered, 5s)) << label;
    try {
      lock.unlock_checked();
    } catch (const redisync::Error& e) {
      ADD_FAILURE() << label << ": its holder cannot release it: " << e.what();
    }
    EXPECT_FALSE(exists(server, lock.name())) << label << ": the lock stays held";
    (void)lock.force_unlock();  // Redisson's channel is allowed: lets the waiter in
    ASSERT_EQ(done.wait_for(10s), std::future_status::ready) << label;
    EXPECT_TRUE(done.get()) << label;
  };
  const auto lock_name = unique_name("lock-grant-acquire:");
  auto lock = holder.lock(lock_name);
  check("lock", lock, [&] { return waiter.lock(lock_name); }, [&] {
    return server.command({"ZCARD", redisync::test::grant::lock_registrations(lock_name)})
               .as_integer() == 1;
  });
  const auto fair_name = unique_name("fair-grant-acquire:");
  auto fair = holder.fair_lock(fair_name);
  check("fair", fair, [&] { return waiter.fair_lock(fair_name); }, [&] {
    return server.command({"HLEN", redisync::test::grant::fair_registrations(fair_name)})
               .as_integer() == 1;
  });
  const auto rw_name = unique_name("rw-grant-acquire:");
  auto write = holder.read_write_lock(rw_name).write_lock();
  check("write", write, [&] { return waiter.read_write_lock(rw_name); }, [&] {
    return server.command({"ZCARD", "redisync_rwlock_grant:{" + rw_name + "}"}).as_integer() == 1;
  });
  // The user may not even take the read lock: the last reader's release grants a writer.
  auto read = holder.read_write_lock(rw_name).read_lock();
  const long long keys_before = server.command({"DBSIZE"}).as_integer();
  fails_naming("read", "redisync_grant__channel:{" + rw_name + "}",
               [&] { (void)read.try_lock(); });
  EXPECT_EQ(server.command({"DBSIZE"}).as_integer(), keys_before) << "read: wrote";

  // A wake-mode client of the same user is unaffected: its releases publish on the lock
  // channel only.
  auto wake_cfg = cfg;
  wake_cfg.handoff = redisync::Handoff::wake;
  redisync::Client wake(wake_cfg);
  auto plain = wake.lock(unique_name("lock-wake:"));
  ASSERT_TRUE(plain.try_lock());
  plain.unlock_checked();
}
