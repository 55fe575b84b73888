// SPDX-License-Identifier: Apache-2.0
// redisync::NonReentrantLock and NonReentrantFairLock (docs/wire-format.md §12) against a real
// redis-server: a second acquire by the holder is a ReentryError (no re-entry, no deadlock, no
// state change), the variants exclude each other, the reentrant kinds and a "Java-layout"
// non-reentrant lock (our own Lua written from the spec's text) on the same name.
#include <gtest/gtest.h>

#include <asio/use_future.hpp>
#include <future>
#include <thread>

#include "lock_kinds_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::unique_name;
namespace kinds = redisync::test::kinds;

namespace {

const std::string kJavaOwner = "0f6c1d2e-3a4b-4c5d-8e9f-a0b1c2d3e4f5:91";

// Java's non-reentrant acquire (docs/wire-format.md §2.2 with the §12 rule), written from the spec.
redisync::test::Reply java_nr_acquire(RedisServer& server, const std::string& name) {
  return server.command(
      {"EVAL",
       "if redis.call('exists', KEYS[1]) == 0 then "
       "  redis.call('hset', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); "
       "  return nil; end "
       "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then "
       "  return redis.error_reply('NON_REENTRANT_REACQUIRE lock is held by this thread'); end "
       "return redis.call('pttl', KEYS[1]);",
       "1", name, "30000", kJavaOwner});
}

// Java's release (docs/wire-format.md §2.3 without the release record): delete and publish "0".
void java_release(RedisServer& server, const std::string& name) {
  const std::string tag = name.find('{') == std::string::npos ? "{" + name + "}" : name;
  server.command({"EVAL",
                  "if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return nil end "
                  "redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], '0'); return 1;",
                  "2", name, "redisson_lock__channel:" + tag, kJavaOwner});
}

template <class L>
void expect_second_acquire_refused(RedisServer& server, L lock, const std::string& name) {
  lock.lock();
  const std::string field = lock.owner_field(redisync::Client::current_thread_id());
  for (int i = 0; i < 3; ++i) {
    try {
      switch (i) {
        case 0: lock.lock(); break;
        case 1: (void)lock.try_lock(); break;
        default: (void)lock.try_lock_for(5s); break;
      }
      ADD_FAILURE() << "a second acquire by the holder succeeded";
    } catch (const redisync::ReentryError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("already held"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(server.command({"HGET", name, field}).as_string(), "1");  // count stays 1
  EXPECT_EQ(lock.hold_count(), 1);
  lock.unlock();  // one unlock releases
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
  EXPECT_THROW(lock.unlock_checked(), redisync::NotOwnerError);
  EXPECT_TRUE(lock.try_lock());  // usable again
  lock.unlock();
}

}  // namespace

TEST(NonReentrantLockTest, SecondAcquireByTheHolderIsAReentryError) {
  RedisServer server;
  redisync::Client client(kinds::config_for(server));
  const auto name = unique_name("nr:");
  expect_second_acquire_refused(server, client.non_reentrant_lock(name), name);
}

TEST(NonReentrantLockTest, FairVariantRefusesReentryAndLeavesTheQueueAlone) {
  RedisServer server;
  redisync::Client client(kinds::config_for(server));
  const auto name = unique_name("nrfair:");
  expect_second_acquire_refused(server, client.non_reentrant_fair_lock(name), name);
  EXPECT_EQ(server.command({"EXISTS", "redisson_lock_queue:{" + name + "}",
                            "redisson_lock_timeout:{" + name + "}"})
                .as_integer(),
            0);
}

// Grant mode (docs/wire-format.md §18) changes how waiters are handed the lock, not what a
// re-entry is.
TEST(NonReentrantLockTest, GrantModeStillRefusesReentry) {
  RedisServer server;
  auto cfg = kinds::config_for(server);
  cfg.handoff = redisync::Handoff::grant;
  redisync::Client client(cfg);
  const auto name = unique_name("nr:");
  expect_second_acquire_refused(server, client.non_reentrant_lock(name), name);
  expect_second_acquire_refused(server, client.non_reentrant_fair_lock(name), name);
}

TEST(NonReentrantLockTest, AsyncSecondAcquireCompletesWithReentryError) {
  RedisServer server;
  redisync::Client client(kinds::config_for(server));
  const auto name = unique_name("nr:");
  auto lock = client.non_reentrant_lock(name);
  const auto owner = redisync::Client::new_owner_id();
  lock.async_lock(owner, asio::use_future).get();
  EXPECT_THROW(lock.async_lock(owner, asio::use_future).get(), redisync::ReentryError);
  EXPECT_THROW(lock.async_try_lock(owner, 1s, redisync::Duration{0}, asio::use_future).get(),
               redisync::ReentryError);
  // Another owner simply waits (and times out here).
  EXPECT_FALSE(lock.async_try_lock(redisync::Client::new_owner_id(), 50ms, redisync::Duration{0},
                                   asio::use_future)
                   .get());
  lock.async_unlock(owner, asio::use_future).get();
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
}

TEST(NonReentrantLockTest, ExcludesTheReentrantKindsOnTheSameName) {
  RedisServer server;
  redisync::Client client(kinds::config_for(server));
  const auto name = unique_name("nr:");
  auto plain = client.lock(name);
  auto nr = client.non_reentrant_lock(name);
  auto nrfair = client.non_reentrant_fair_lock(name);
  // Another thread holds the plain lock: both variants wait for it.
  std::promise<void> held, go;
  std::thread holder([&] {
    plain.lock();
    held.set_value();
    go.get_future().wait();
    plain.unlock();
  });
  held.get_future().wait();
  EXPECT_FALSE(nr.try_lock_for(50ms));
  EXPECT_FALSE(nrfair.try_lock_for(50ms));
  go.set_value();
  holder.join();
  // This thread holds the plain (reentrant) lock: the non-reentrant variant refuses to count
  // that as a re-entry.
  plain.lock();
  EXPECT_THROW(nr.lock(), redisync::ReentryError);
  plain.unlock();
  // And a non-reentrant holder keeps a plain Lock of another thread out.
  nr.lock();
  EXPECT_FALSE(std::async(std::launch::async, [&] { return plain.try_lock_for(50ms); }).get());
  nr.unlock();
}

TEST(NonReentrantLockTest, VariantsExcludeEachOtherAcrossProcesses) {
  RedisServer server;
  const auto name = unique_name("nrmix:");
  std::vector<pid_t> pids;
  for (const char* kind : {"nr", "nr", "lock", "nrfair"}) {
    pids.push_back(kinds::spawn_worker(
        {"kind-counter", kind, server.url(), name, "counter", "30"}));
  }
  for (pid_t pid : pids) kinds::expect_clean_exit(pid);
  EXPECT_EQ(server.command({"GET", "counter"}).as_string(), "120");
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
}

TEST(NonReentrantLockTest, JavaLayoutNonReentrantLockAndOursExcludeEachOther) {
  RedisServer server;
  redisync::Client client(kinds::config_for(server));
  const auto name = unique_name("nr:");
  auto lock = client.non_reentrant_lock(name);

  // Java holds it: we wait, and its release wakes our waiter.
  ASSERT_TRUE(java_nr_acquire(server, name).is_nil());
  EXPECT_TRUE(java_nr_acquire(server, name).is_error());  // Java's own re-entry is refused
  EXPECT_FALSE(lock.try_lock());
  auto waiter = std::async(std::launch::async, [&] {
    const bool got = lock.try_lock_for(10s);
    if (got) lock.unlock();
    return got;
  });
  ASSERT_TRUE(redisync::test::wait_until(
      [&] {
        auto r = server.command({"PUBSUB", "NUMSUB", "redisson_lock__channel:{" + name + "}"});
        return r.elements.size() == 2 && r.elements[1].as_integer() > 0;
      },
      5s));
  java_release(server, name);
  EXPECT_TRUE(waiter.get());

  // We hold it: Java is kept out (a PTTL reply), and our field is the usual layout.
  lock.lock();
  auto attempt = java_nr_acquire(server, name);
  ASSERT_EQ(attempt.kind, redisync::test::Reply::Kind::integer);
  EXPECT_GT(attempt.integer, 0);
  EXPECT_EQ(server.command({"HGET", name, lock.owner_field(redisync::Client::current_thread_id())})
                .as_string(),
            "1");
  lock.unlock();
  EXPECT_TRUE(java_nr_acquire(server, name).is_nil());
}
