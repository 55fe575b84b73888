// SPDX-License-Identifier: Apache-2.0
// Grant-mode scripts on hand-built keys (docs/wire-format.md "Direct handoff"). grant_extend.lua's
// two decisions:
// a hash that is still exactly the grant, its mark naming the extended acquisition, gets the
// grantee's lease, shorter or longer than the grant lease; a hold re-entered or joined since,
// or one found after the mark ended, keeps the never-shorten rule of renewals; the
// grant mark ends when it names the extended acquisition, and only then.
// The exact-set branch is also covered end to end by the *OwnLease* grant tests; the
// never-shorten branch only happens when a re-entry or a join wins the race with the
// extension, which a client cannot order on purpose, so it is driven here directly.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lua/scripts.h"
#include "support/redis_server.h"
#include "support/test_util.h"

using redisync::test::RedisServer;
using redisync::test::unique_name;

namespace {

constexpr const char* kField = "client-a:7";              // a Lock holder
constexpr const char* kWriter = "client-a:7:write";       // a ReadWriteLock writer

// The hash `fields` (name, value, ...) on `name`, expiring in `pttl_ms`.
void make_hash(RedisServer& server, const std::string& name, std::vector<std::string> fields,
               long long pttl_ms) {
  std::vector<std::string> hset{"HSET", name};
  hset.insert(hset.end(), fields.begin(), fields.end());
  server.command(hset);
  server.command({"PEXPIRE", name, std::to_string(pttl_ms)});
}

constexpr const char* kId = "00aa11bb22cc33dd";  // the extended acquisition's grant id

std::string mark_key(const std::string& name) { return "redisync_grant_mark:{" + name + "}"; }

// The grant mark naming `field`'s acquisition kId: the grant is not taken yet.
void mark(RedisServer& server, const std::string& name, const std::string& field = kField) {
  server.command({"SET", mark_key(name), field + " " + kId, "PX", "60000"});
}

// Runs the extension of `field` (acquisition kId) on `name` to `lease_ms`; returns its {1}/{0}
// as 1/0.
long long extend(RedisServer& server, const std::string& name, long long lease_ms,
                 const std::string& field = kField) {
  auto reply = server.command({"EVAL", std::string(redisync::lua::grant_extend.source), "2",
                               name, mark_key(name), std::to_string(lease_ms), field, kId});
  EXPECT_EQ(reply.elements.size(), 1u);
  return reply.elements.empty() ? -1 : reply.elements[0].as_integer();
}

long long pttl(RedisServer& server, const std::string& name) {
  return server.command({"PTTL", name}).as_integer();
}

}  // namespace

TEST(GrantExtendScript, JustTheGrantGetsTheShorterLeaseExactly) {
  RedisServer server;
  const auto name = unique_name("extend:");
  make_hash(server, name, {kField, "1"}, 60000);
  mark(server, name);
  EXPECT_EQ(extend(server, name, 400), 1);
  EXPECT_LE(pttl(server, name), 400);
  EXPECT_GT(pttl(server, name), 0);
}

TEST(GrantExtendScript, ALateCopyNeverShortensTheOwnersNextHold) {
  // The extension ran (the mark ended) and its reply was lost; the owner released and took the
  // lock again with a longer lease; the resent copy finds a hash of the same shape. Cutting it
  // ended that hold 1 s before the Client's deadline (lease property, fair grant seed 29176).
  RedisServer server;
  const auto name = unique_name("extend-late:");
  make_hash(server, name, {kField, "1"}, 60000);
  EXPECT_EQ(extend(server, name, 400), 1);
  EXPECT_GT(pttl(server, name), 50000) << "the next hold's lease was cut";
}

TEST(GrantExtendScript, JustTheWriteGrantOfAReadWriteLockGetsTheShorterLease) {
  RedisServer server;
  const auto name = unique_name("extend-rw:");
  make_hash(server, name, {"mode", "write", kWriter, "1"}, 60000);
  mark(server, name, kWriter);
  EXPECT_EQ(extend(server, name, 400, kWriter), 1);
  EXPECT_LE(pttl(server, name), 400);
}

TEST(GrantExtendScript, AReenteredHoldIsNeverShortened) {
  RedisServer server;
  const auto name = unique_name("extend-reentered:");
  make_hash(server, name, {kField, "2"}, 60000);
  EXPECT_EQ(extend(server, name, 400), 1);
  EXPECT_GT(pttl(server, name), 50000) << "the re-entry's longer lease was cut";
  EXPECT_EQ(server.command({"HGET", name, kField}).as_string(), "2");
}

TEST(GrantExtendScript, AJoinedHoldIsNeverShortened) {
  RedisServer server;
  const auto name = unique_name("extend-joined:");
  // A read-write lock whose granted writer was joined by its own thread's read hold.
  make_hash(server, name, {"mode", "write", kWriter, "1", kField, "1"}, 60000);
  EXPECT_EQ(extend(server, name, 400, kWriter), 1);
  EXPECT_GT(pttl(server, name), 50000) << "the joined hold's lease was cut";
}

TEST(GrantExtendScript, AReenteredHoldIsStillLengthened) {
  RedisServer server;
  const auto name = unique_name("extend-longer:");
  make_hash(server, name, {kField, "2"}, 300);
  EXPECT_EQ(extend(server, name, 60000), 1);
  EXPECT_GT(pttl(server, name), 50000);
}

TEST(GrantExtendScript, AHoldThatIsGoneIsNotCreated) {
  RedisServer server;
  const auto name = unique_name("extend-gone:");
  EXPECT_EQ(extend(server, name, 400), 0);
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
  make_hash(server, name, {"client-b:1", "1"}, 60000);  // someone else's lock
  EXPECT_EQ(extend(server, name, 400), 0);
  EXPECT_GT(pttl(server, name), 50000) << "another holder's lease was cut";
  EXPECT_TRUE(server.command({"HGET", name, kField}).is_nil());
}

TEST(GrantExtendScript, TheGrantMarkEndsOnlyWhenItNamesTheExtendedAcquisition) {
  RedisServer server;
  const auto name = unique_name("extend-mark:");
  make_hash(server, name, {kField, "1"}, 60000);
  server.command({"SET", mark_key(name), std::string(kField) + " ffffffffffffffff", "PX", "60000"});
  EXPECT_EQ(extend(server, name, 400), 1);
  EXPECT_EQ(server.command({"EXISTS", mark_key(name)}).as_integer(), 1)
      << "another acquisition's grant mark was ended";
  server.command({"SET", mark_key(name), std::string(kField) + " " + kId, "PX", "60000"});
  EXPECT_EQ(extend(server, name, 400), 1);
  EXPECT_EQ(server.command({"EXISTS", mark_key(name)}).as_integer(), 0);
}

// --- The grant mark decides what a field found in the lock is (lock_grant_acquire.lua,
// lock_grant_release.lua) ---

namespace {

std::vector<std::string> lock_keys(const std::string& name) {
  return {name, "redisync_lock_grant:{" + name + "}", "redisync_lock_grant_id:{" + name + "}",
          mark_key(name)};
}

// lock_grant_acquire.lua for kField as acquisition `id` with `lease_ms`; its reply (nil: acquired,
// -3: took its grant, else the PTTL).
redisync::test::Reply acquire(RedisServer& server, const std::string& name, const std::string& id,
                              long long lease_ms) {
  const auto& script = redisync::lua::lock_grant_acquire;
  std::vector<std::string> cmd{"EVAL", std::string(script.source), "4"};
  for (const auto& k : lock_keys(name)) cmd.push_back(k);
  for (const auto& a : {std::to_string(lease_ms), std::string(kField), id, std::string("0"),
                        std::string("5"), std::string("0"), std::string("0")}) {
    cmd.push_back(a);
  }
  return server.command(cmd);
}

}  // namespace

TEST(GrantMarkScript, OnlyTheAcquisitionTheMarkNamesTakesTheFieldForItsGrant) {
  RedisServer server;
  const auto name = unique_name("mark:");
  make_hash(server, name, {kField, "1"}, 60000);
  server.command({"SET", mark_key(name), std::string(kField) + " 1111111111111111", "PX", "60000"});
  // Another acquisition of the same owner whose client does not hold the lock (a second
  // async acquire, a late copy of its attempt): it waits for the grant to be taken, and
  // changes nothing (re-entered, the grantee could not take its grant by an attempt).
  const auto waits = acquire(server, name, kId, 400);
  ASSERT_EQ(waits.kind, redisync::test::Reply::Kind::integer) << waits.debug_string();
  EXPECT_GT(waits.as_integer(), 50000) << "the wait is the mark's PTTL";
  EXPECT_EQ(server.command({"HGET", name, kField}).as_string(), "1");
  EXPECT_EQ(server.command({"EXISTS", mark_key(name)}).as_integer(), 1);
  // An acquisition of the owner whose client holds the lock (id ""): a re-entry.
  const auto other = acquire(server, name, "", 400);
  EXPECT_TRUE(other.is_nil()) << other.debug_string();
  EXPECT_EQ(server.command({"HGET", name, kField}).as_string(), "2");
  EXPECT_GT(pttl(server, name), 50000) << "a hold of the owner was cut to another's lease";
  EXPECT_EQ(server.command({"EXISTS", mark_key(name)}).as_integer(), 0)
      << "a re-entered grant is no longer just a grant: its mark ends";
  // The acquisition the mark names takes its grant with its own lease, exactly.
  const auto other_name = unique_name("mark:");
  make_hash(server, other_name, {kField, "1"}, 60000);
  server.command({"SET", mark_key(other_name), std::string(kField) + " " + kId, "PX", "60000"});
  EXPECT_EQ(acquire(server, other_name, kId, 400).as_integer(), -3);
  EXPECT_LE(pttl(server, other_name), 400);
  EXPECT_EQ(server.command({"EXISTS", mark_key(other_name)}).as_integer(), 0);
}

TEST(GrantMarkScript, AReleaseThatLeavesAReenteredGrantEndsItsMark) {
  RedisServer server;
  const auto name = unique_name("mark-release:");
  make_hash(server, name, {kField, "2"}, 60000);  // a grant re-entered by a plain step
  server.command({"SET", mark_key(name), std::string(kField) + " " + kId, "PX", "60000"});
  const auto& script = redisync::lua::lock_grant_release;
  const auto keys = lock_keys(name);
  const auto reply = server.command(
      {"EVAL", std::string(script.source), "7", keys[0], "redisson_lock__channel:{" + name + "}",
       "redisson_unlock_latch:{" + name + "}:r1", keys[1], keys[2], keys[3],
       "redisync_grant__channel:{" + name + "}", "0", "60000", kField, "60000", "PUBLISH",
       "2000"});
  EXPECT_EQ(reply.as_integer(), 0);  // one hold left
  EXPECT_EQ(server.command({"EXISTS", mark_key(name)}).as_integer(), 0)
      << "the hold left is not the grant: a late attempt of the grant's acquisition must not "
         "take it (and set its lease)";
}
