// SPDX-License-Identifier: Apache-2.0
// The release records of a Client ("redisson_unlock_latch:*", docs/wire-format.md §1.8) are
// swept when it is destroyed, so short-lived Clients (a cron-style `redisync run`) leave no
// trail of records for their 90 s TTL. The sweep is bounded: a destructor never hangs on a
// paused or unreachable server. A record whose release may still arrive is never swept.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli_support.h"
#include "redisync/redisync.h"
#include "support/fault_proxy.h"
#include "support/redis_server.h"
#include "support/server_pause.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::config_for;
using redisync::test::Direction;
using redisync::test::FaultProxy;
using redisync::test::RedisServer;
using redisync::test::unique_name;

namespace {

std::vector<std::string> release_records(RedisServer& server) {
  std::vector<std::string> keys;
  for (const auto& e : server.command({"KEYS", "redisson_unlock_latch:*"}).elements) {
    keys.push_back(e.str);
  }
  std::sort(keys.begin(), keys.end());
  return keys;
}

// Destroys `client` on another thread; true if that returned within `limit` (a generous bound:
// the sweep waits at most min(timeout, 1 s) for its answer).
bool destroyed_within(std::unique_ptr<redisync::Client>& client, std::chrono::seconds limit) {
  auto done = std::async(std::launch::async, [&client] { client.reset(); });
  return done.wait_for(limit) == std::future_status::ready;
}

}  // namespace

TEST(UnlockLatchSweep, DestroyedClientLeavesNoRecordOfItsReleases) {
  RedisServer server;
  const auto name = unique_name("sweep:");
  // A record of another client's release (its resend may still be on its way): not ours.
  const std::string others = "redisson_unlock_latch:{" + name + "}:another-client";
  server.command({"SET", others, "1", "PX", "90000"});
  for (int round = 0; round < 3; ++round) {
    {
      redisync::Client client(config_for(server));
      auto lock = client.lock(name);
      lock.lock();
      lock.unlock_checked();
      auto fair = client.fair_lock(name + ":fair");
      fair.lock();
      fair.unlock_checked();
      auto rw = client.read_write_lock(name + ":rw");
      rw.lock();
      rw.unlock_checked();
    }  // destroyed at once, before the sweeper's own timer (5 ms) sends the DEL
    EXPECT_EQ(release_records(server), std::vector<std::string>{others})
        << "round " << round << ": the destroyed Client left records of its releases";
  }
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
}

// A release resent after its first copy was held back (as a partition's backlog holds it): the
// late copy must find the record and change nothing, so the record outlives its Client.
TEST(UnlockLatchSweep, RecordAResendMayStillNeedIsKept) {
  RedisServer server;
  FaultProxy proxy{server.port()};
  auto cfg = redisync::test::fast_config(proxy.url());
  cfg.retry_attempts = 3;
  cfg.lock_watchdog_timeout = 10s;
  auto holder = std::make_unique<redisync::Client>(cfg);
  const auto name = unique_name("sweep:");
  auto lock = holder->lock(name);
  lock.lock();
  lock.unlock_checked();  // loads the script: the withheld copy below is an EVALSHA
  lock.lock();
  proxy.withhold_request({.command = "EVALSHA", .arg_containing = "redisson_unlock_latch"}, 1);
  EXPECT_NO_THROW(lock.unlock_checked()) << "the resend released the lock";
  const auto held = proxy.withheld();
  ASSERT_EQ(held.size(), 1u) << "no release was withheld: the case tested nothing";
  const auto record = std::find_if(held[0].begin(), held[0].end(), [](const std::string& a) {
    return a.rfind("redisson_unlock_latch:", 0) == 0;
  });
  ASSERT_NE(record, held[0].end());

  ASSERT_TRUE(destroyed_within(holder, 30s));
  EXPECT_EQ(server.command({"EXISTS", *record}).as_integer(), 1)
      << "the record of a resent release was swept: its late copy would run as a new release";
  EXPECT_GT(server.command({"PTTL", *record}).as_integer(), 0) << "it expires by itself";
  EXPECT_EQ(release_records(server), std::vector<std::string>{*record})
      << "the records of releases that completed once were left behind";
  // The late first copy arrives: answered from the record ("released"), nothing changed.
  EXPECT_EQ(server.command(held[0]).as_integer(), 1);
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
}

// The sweeper's DEL is held up (its connection stalls: the proxy withholds it), times out, and
// the connection is given up. Its records are not left for their TTL: they go with the next
// DEL, at the latest the closing Client's. Seen in CI: a DEL queued behind a release whose
// connection was given up left its record behind when the Client was destroyed.
TEST(UnlockLatchSweep, RecordsOfADelThatNeverArrivedAreDeletedAfterAll) {
  RedisServer server;
  FaultProxy proxy{server.port()};
  auto client = std::make_unique<redisync::Client>(redisync::test::fast_config(proxy.url()));
  const auto name = unique_name("sweep:");
  auto lock = client->lock(name);
  proxy.withhold_request({.command = "DEL", .arg_containing = "redisson_unlock_latch"}, 1);
  lock.lock();
  lock.unlock_checked();
  ASSERT_TRUE(redisync::test::wait_until([&] { return proxy.withheld().size() == 1; }, 5s))
      << "the sweeper's DEL was not withheld: the case tested nothing";
  ASSERT_EQ(release_records(server).size(), 1u);
  // The stalled connection is given up (2 x timeout + connect timeout of silence) and a new
  // one answers.
  ASSERT_TRUE(redisync::test::answers_again(*client, 10s));
  ASSERT_TRUE(destroyed_within(client, 30s));
  EXPECT_EQ(release_records(server), std::vector<std::string>{})
      << "the record of a completed release was left behind";
}

TEST(UnlockLatchSweep, DestroyedWhileServerPausedReturns) {
  RedisServer server;
  FaultProxy proxy{server.port()};
  const auto name = unique_name("sweep:");
  auto client = std::make_unique<redisync::Client>(redisync::Config::from_url(proxy.url()));
  auto lock = client->lock(name);
  lock.lock();
  // The server is paused right after it ran the release, while the proxy still holds back the
  // reply: the release completes, and its record is left for the destructor's sweep (its own
  // 5 ms timer has no time to send it first), which then meets a paused server.
  proxy.set_delay(Direction::to_client, 300ms);
  auto pauser = std::async(std::launch::async, [&] {
    if (!redisync::test::wait_until(
            [&] { return server.command({"EXISTS", name}).as_integer() == 0; }, 10s, 1ms)) {
      return false;
    }
    server.pause();
    return true;
  });
  EXPECT_NO_THROW(lock.unlock_checked());
  ASSERT_TRUE(pauser.get()) << "the release never ran";
  const bool returned = destroyed_within(client, 30s);
  server.resume();
  proxy.set_delay(Direction::to_client, 0ms);
  ASSERT_TRUE(returned) << "the destructor waited on a paused server";

  // Nothing else broke: another Client takes and releases the lock, and any record left
  // behind expires by itself.
  redisync::Client other(config_for(server));
  auto again = other.lock(name);
  EXPECT_TRUE(again.try_lock());
  EXPECT_NO_THROW(again.unlock_checked());
  // A record listed may be gone by the time it is asked about (-2: the other Client's own
  // sweep, or its TTL): only a record without an expiry (-1) would stay forever.
  for (const auto& key : release_records(server)) {
    EXPECT_NE(server.command({"PTTL", key}).as_integer(), -1) << key << " has no expiry";
  }
}

TEST(UnlockLatchSweep, DestroyedWhileCutOffReturns) {
  RedisServer server;
  FaultProxy proxy{server.port()};
  const auto name = unique_name("sweep:");
  auto client = std::make_unique<redisync::Client>(redisync::Config::from_url(proxy.url()));
  auto lock = client->lock(name);
  lock.lock();
  lock.unlock_checked();
  proxy.set_blackhole(Direction::both, true);
  ASSERT_TRUE(destroyed_within(client, 30s)) << "the destructor waited on a cut connection";
  proxy.set_blackhole(Direction::both, false);

  redisync::Client other(config_for(server));
  auto again = other.lock(name);
  EXPECT_TRUE(again.try_lock());
  EXPECT_NO_THROW(again.unlock_checked());
}

// `redisync run NAME -- true` from cron: each run is a short-lived Client.
class CliUnlockLatchSweep : public redisync::test::CliTest {};

TEST_F(CliUnlockLatchSweep, RunLeavesNoReleaseRecord) {
  const auto name = unique_name("sweep:");
  for (int run = 0; run < 3; ++run) {
    const auto r = cli({"run", "--redis", server_.url(), name, "--", "true"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(server_.command({"KEYS", "redisson_unlock_latch:*"}).elements.size(), 0u)
        << "run " << run << " left a release record";
  }
  EXPECT_EQ(server_.command({"EXISTS", name}).as_integer(), 0);
}
