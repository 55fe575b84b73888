// SPDX-License-Identifier: Apache-2.0
// Readers beside granted writers (Config::handoff = grant, docs/wire-format.md "Direct
// handoff", ReadWriteLock). Readers are never granted; a redisync reader refused by a write
// hold sets "redisync_rwlock_readers:TAG(N)" for a grant lease after each attempt. While it
// exists, a release that frees the lock wakes the waiters (Redisson's "1") instead of granting
// a registered writer, and writers leave a free lock to the readers. Without it, writers that
// took turns handed the lock to each other and a waiting reader never got in.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "grant_util.h"
#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using namespace redisync::test;         // RedisServer, wait_until...
using namespace redisync::test::grant;  // grant_util.h

namespace rw_readers {

std::string readers_key(const std::string& name) { return "redisync_rwlock_readers:{" + name + "}"; }

bool exists(RedisServer& server, const std::string& key) {
  return server.command({"EXISTS", key}).as_integer() == 1;
}

std::string mode_of(RedisServer& server, const std::string& name) {
  auto r = server.command({"HGET", name, "mode"});
  return r.is_nil() ? "" : r.as_string();
}

// A reader refused by a held write lock, waiting `wait` (0: a single attempt), its Client in
// grant mode or not: it must leave no readers key behind.
void expect_refused_reader_leaves_no_key(bool grant, std::chrono::milliseconds wait) {
  RedisServer server;
  const auto config = grant ? grant_config(server) : config_for(server);
  const auto name = unique_name("rw-readers:");
  redisync::Client holder(config), reader(config);
  auto held = holder.read_write_lock(name);
  held.lock();
  auto read = std::async(std::launch::async, [&] {
    return reader.read_write_lock(name).try_lock_shared_for(wait);
  });
  EXPECT_FALSE(read.get());
  EXPECT_FALSE(exists(server, readers_key(name)));
  held.unlock_checked();
}

}  // namespace rw_readers

TEST(RwGrantReadersTest, AWaitingReaderGetsInBetweenWritersThatHandTheLockToEachOther) {
  RedisServer server;
  const auto name = unique_name("rw-readers:");
  redisync::Client w1(grant_config(server)), w2(grant_config(server)), w3(grant_config(server)),
      r(grant_config(server));
  std::atomic<bool> stop{false};
  std::atomic<int> rounds{0};
  // Three writers take turns without a pause: each release finds another one registered.
  auto writer = [&](redisync::Client& c) {
    return std::async(std::launch::async, [&] {
      auto rw = c.read_write_lock(name);
      const auto until = std::chrono::steady_clock::now() + 30s;
      for (int i = 0; i < 5000 && !stop && std::chrono::steady_clock::now() < until; ++i) {
        if (!rw.try_lock_for(10s)) return false;
        std::this_thread::sleep_for(20ms);  // long beside a round trip
        rw.unlock_checked();
        ++rounds;
      }
      return true;
    });
  };
  auto a = writer(w1);
  auto b = writer(w2);
  auto c = writer(w3);
  ASSERT_TRUE(wait_until([&] { return rounds.load() >= 10; }, 10s));
  auto rw = r.read_write_lock(name);
  const int before = rounds.load();
  const bool got = rw.try_lock_shared_for(10s);
  const int writes_while_waiting = rounds.load() - before;
  if (got) rw.unlock_shared_checked();
  stop = true;
  EXPECT_TRUE(got) << "the reader waited 10 s while the writers handed the lock on";
  // Write turns that ended while the reader waited: the one under way when it was refused, at
  // most one granted as its attempt ran or while it was being sent, and one release per writer
  // counted late (a writer counts its turn after unlock returns): 2 x 3 leaves room for a
  // slow machine. Before, writers handed the lock to each other and the reader got in only
  // when its own retry found the lock free between two of them: hundreds of turns, or never.
  EXPECT_LE(writes_while_waiting, 2 * 3);
  EXPECT_TRUE(a.get()) << "a writer starved in turn";
  EXPECT_TRUE(b.get()) << "a writer starved in turn";
  EXPECT_TRUE(c.get()) << "a writer starved in turn";
  // The last writer's release found nobody waiting: nothing left behind.
  EXPECT_TRUE(wait_until([&] { return !rw_readers::exists(server, name); }, 5s));
}

TEST(RwGrantReadersTest, AWriteReleaseWakesTheWaitingReaderAheadOfARegisteredWriter) {
  RedisServer server;
  const auto name = unique_name("rw-readers:");
  redisync::Client holder(grant_config(server, 60000ms)), writer(grant_config(server, 60000ms)),
      reader(grant_config(server, 60000ms));
  auto held = holder.read_write_lock(name);
  held.lock();
  auto writing = try_lock_async([&] { return writer.read_write_lock(name); });
  ASSERT_TRUE(wait_until(
      [&] { return server.command({"ZCARD", "redisync_rwlock_grant:{" + name + "}"}).as_integer() == 1; },
      5s));
  std::promise<void> release_read;
  std::atomic<bool> reading{false};
  auto read = std::async(std::launch::async, [&] {
    auto rw = reader.read_write_lock(name);
    if (!rw.try_lock_shared_for(10s)) return false;
    reading = true;
    release_read.get_future().wait();
    rw.unlock_shared_checked();
    return true;
  });
  ASSERT_TRUE(wait_until([&] { return rw_readers::exists(server, rw_readers::readers_key(name)); }, 5s));
  held.unlock_checked();
  // The reader, not the registered writer, has the lock; the reader ended the key.
  ASSERT_TRUE(wait_until([&] { return reading.load(); }, 5s));
  EXPECT_EQ(rw_readers::mode_of(server, name), "read");
  EXPECT_FALSE(rw_readers::exists(server, rw_readers::readers_key(name)));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(writing.wait_for(0s), std::future_status::timeout) << "the writer ran beside a reader";
  // The reader's release grants the writer, which is still registered.
  release_read.set_value();
  EXPECT_TRUE(read.get());
  EXPECT_TRUE(writing.get());
}

TEST(RwGrantReadersTest, AReaderThatDiedLeavesAFreeLockToWritersWithinTheGrantLease) {
  RedisServer server;
  const auto name = unique_name("rw-readers:");
  redisync::Client writer(grant_config(server, 400ms));
  // What a refused reader leaves behind, for 400 ms, and then nobody comes.
  server.command({"SET", rw_readers::readers_key(name), "1", "PX", "400"});
  auto rw = writer.read_write_lock(name);
  ASSERT_TRUE(rw.try_lock_for(5s)) << "a dead reader's key kept the writer out for good";
  // The writer waited for the key's end: gone (-2), or in its last millisecond (0), which the
  // acquire script counts as gone (it reads PTTL, and a writer's wake-up can land inside that
  // millisecond; the key then still EXISTS for a moment, as one plain-build run of CI saw).
  EXPECT_LE(server.command({"PTTL", rw_readers::readers_key(name)}).as_integer(), 0);
  rw.unlock_checked();
}

TEST(RwGrantReadersTest, AReadersKeyNoReaderCouldHaveSetIsIgnored) {
  // Without expiry, or longer than the largest grant lease (60 s): someone else's write. Taken
  // as a waiting reader it would keep writers out for good.
  RedisServer server;
  redisync::Client writer(grant_config(server));
  for (const std::vector<std::string>& ttl : {std::vector<std::string>{},
                                             std::vector<std::string>{"PX", "3600000"}}) {
    const auto name = unique_name("rw-readers:");
    std::vector<std::string> set{"SET", rw_readers::readers_key(name), "1"};
    set.insert(set.end(), ttl.begin(), ttl.end());
    server.command(set);
    auto rw = writer.read_write_lock(name);
    ASSERT_TRUE(rw.try_lock_for(3s)) << "a readers key " << (ttl.empty() ? "without expiry" : "of an hour")
                                     << " kept the writer out";
    rw.unlock_checked();
  }
}

TEST(RwGrantReadersTest, AReaderThatWillNotWaitKeepsNoWriterOut) {
  rw_readers::expect_refused_reader_leaves_no_key(/*grant=*/true, 0ms);
}

TEST(RwGrantReadersTest, WakeModeReadersSetNothing) {
  rw_readers::expect_refused_reader_leaves_no_key(/*grant=*/false, 300ms);
}
