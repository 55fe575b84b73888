// SPDX-License-Identifier: Apache-2.0
// Scripts are loaded once per connection, not once per call (issue 34): thousands of acquires
// started at once on a fresh server, or right after SCRIPT FLUSH, send each script once
// (SCRIPT LOAD) instead of answering NOSCRIPT to every call and resending each as an EVAL.
// Counted by the server itself (INFO errorstats, INFO commandstats).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <string>
#include <vector>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/server_stats.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::command_calls;
using redisync::test::info_field;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

// NOSCRIPT errors the server answered since its start or its last CONFIG RESETSTAT.
long long noscript_errors(RedisServer& server) {
  const std::string count = info_field(server, "errorstats", "errorstat_NOSCRIPT");
  // "count=N"
  return count.empty() ? 0 : std::stoll(count.substr(count.find('=') + 1));
}

// Script sources the server was sent: SCRIPT LOADs and EVALs.
long long script_sends(RedisServer& server) {
  return command_calls(server, "script|load") + command_calls(server, "eval");
}

// Starts async_lock on `n` distinct locks at once, then async_unlock on each; returns the
// number of acquires that failed (all are waited for, within a bound).
int lock_and_unlock_all(redisync::Client& client, int n) {
  std::vector<redisync::Lock> locks;
  locks.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) locks.push_back(client.lock(unique_name("many")));
  std::atomic<int> locked{0}, failed{0}, unlocked{0};
  for (auto& lock : locks) {
    lock.async_lock(1, [&](std::exception_ptr error) { ++(error ? failed : locked); });
  }
  EXPECT_TRUE(wait_until([&] { return locked + failed == n; }, 60s)) << locked << " of " << n;
  for (auto& lock : locks) {
    if (lock.is_held_by_thread(1)) lock.async_unlock(1, [&](std::exception_ptr) { ++unlocked; });
  }
  EXPECT_TRUE(wait_until([&] { return unlocked == locked; }, 60s)) << unlocked << " of " << locked;
  return failed;
}

// Scripts one acquire and one release of a Lock may send: the acquire, the release, and the
// sub-steps sent with them.
constexpr long long kScriptsOfALock = 4;

}  // namespace

TEST(ScriptLoad, ThousandsOfFirstAcquiresOnAFreshServerLoadEachScriptOnce) {
  RedisServer server;
  redisync::Client client(server.url());
  const int n = redisync::test::load_count(2000);
  EXPECT_EQ(lock_and_unlock_all(client, n), 0);
  RecordProperty("noscript_errors", std::to_string(noscript_errors(server)));
  RecordProperty("script_sends", std::to_string(script_sends(server)));
  // One Client, one command connection: each script loaded once, no call answered NOSCRIPT.
  EXPECT_LE(noscript_errors(server), kScriptsOfALock);
  EXPECT_LE(script_sends(server), kScriptsOfALock);
  EXPECT_GE(redisync::test::evalsha_calls(server), 2 * n);
}

TEST(ScriptLoad, AfterScriptFlushEachScriptIsLoadedOnceMoreNotOncePerCall) {
  RedisServer server;
  redisync::Client client(server.url());
  EXPECT_EQ(lock_and_unlock_all(client, 10), 0);  // the scripts are loaded now
  server.command({"SCRIPT", "FLUSH"});
  server.command({"CONFIG", "RESETSTAT"});
  const int n = redisync::test::load_count(2000);
  EXPECT_EQ(lock_and_unlock_all(client, n), 0);
  RecordProperty("noscript_errors", std::to_string(noscript_errors(server)));
  RecordProperty("script_sends", std::to_string(script_sends(server)));
  // The calls already on their way when the first NOSCRIPT came back hear it too (the client
  // cannot know of a flush before the server says so); they are sent again behind one load.
  EXPECT_LE(script_sends(server), kScriptsOfALock);
  EXPECT_LE(noscript_errors(server), 2 * n);
}

TEST(ScriptLoad, AUserWhoMayNotLoadScriptsLoadsThemWithOneEvalEach) {
  RedisServer server;
  redisync::Client client(
      redisync::Config::from_url(server.add_user("noload", {"~*", "&*", "+@all", "-script"})));
  auto lock = client.lock(unique_name("noload"));
  for (int i = 0; i < 20; ++i) {
    lock.lock();
    lock.unlock();
  }
  EXPECT_FALSE(lock.is_locked());
  // Per script: its SCRIPT LOAD refused, the call behind it answered NOSCRIPT, then one EVAL
  // (which caches it) and EVALSHA from then on.
  EXPECT_LE(noscript_errors(server), kScriptsOfALock);
  EXPECT_LE(command_calls(server, "eval"), kScriptsOfALock);
  EXPECT_GE(redisync::test::evalsha_calls(server), 40 - kScriptsOfALock);
}
