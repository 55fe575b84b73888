// SPDX-License-Identifier: Apache-2.0
// The requests of the FairLock and NonReentrantFairLock acquisition record (sync/locks/
// fair_lock_steps.h), pinned byte for byte in both handoff modes, queueing or not: a Redisson
// client on the same lock reads this queue, these deadlines and these channels. No server: the
// Client never connects (nothing is sent).
#include "sync/locks/fair_lock_steps.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lua/scripts.h"
#include "lua/publish_guard.h"
#include "redisync/config.h"
#include "support/steps_wire.h"
#include "sync/acquire/grant.h"
#include "sync/client_core.h"

using namespace std::chrono_literals;
using redisync::Config;
using redisync::Handoff;
using redisync::detail::ClientCore;
using redisync::detail::FairAcquisition;
using redisync::detail::FairLockSteps;
namespace lua = redisync::lua;
using redisync::test::RecordTestKind;
using redisync::test::unconnected_core;
using Strings = std::vector<std::string>;

namespace {

constexpr std::int64_t kOwner = 7;
const std::string kName = "orders:42";

std::shared_ptr<FairLockSteps> steps_of(const std::shared_ptr<ClientCore>& core,
                                        FairAcquisition how) {
  return redisync::detail::fair_lock_steps(core, std::make_shared<RecordTestKind>(), kName, kOwner,
                                           30s, std::move(how));
}

redisync::Reply integer_reply(long long value) {
  redisync::Reply reply;
  reply.kind = redisync::Reply::Kind::integer;
  reply.integer = value;
  return reply;
}

const lua::Script& plain_step() { return lua::fair_lock_acquire; }

TEST(FairLockStepsWire, WakeModeQueuesOnItsOwnChannel) {
  auto core = unconnected_core(Handoff::wake);
  auto steps = steps_of(core, {});
  const std::string field = core->id() + ":7";
  EXPECT_EQ(&steps->script(), &lua::with_publish_guard(plain_step(), false));
  EXPECT_EQ(steps->keys(), (Strings{"orders:42", "redisson_lock_queue:{orders:42}",
                                    "redisson_lock_timeout:{orders:42}"}));
  // lease, owner field, the wait allowance (fair_lock_wait_timeout), the unused "now", queue,
  // then the publish guard's command and the waiter's own channel.
  EXPECT_EQ(steps->args(), (Strings{"30000", field, "5000", "0", "1", "PUBLISH",
                                    "redisson_lock__channel:{orders:42}:" + field}));
  EXPECT_EQ(steps->channel(), "redisson_lock__channel:{orders:42}:" + field);
}

TEST(FairLockStepsWire, OneAttemptNeverJoinsTheQueue) {
  auto core = unconnected_core(Handoff::wake);
  FairAcquisition how;
  how.queueing = false;
  const Strings args = steps_of(core, how)->args();
  ASSERT_EQ(args.size(), 7u);
  EXPECT_EQ(args[4], "0");
}

TEST(FairLockStepsWire, NonReentrantSendsTheGuardedStep) {
  auto core = unconnected_core(Handoff::wake);
  FairAcquisition how;
  how.reentrant = false;
  auto steps = steps_of(core, how);
  EXPECT_EQ(steps->script().name, "non_reentrant_fair_lock_acquire");
  const std::string source(steps->script().source);
  const auto guard = source.find(lua::non_reentrant_guard.source);
  ASSERT_NE(guard, std::string::npos);
  EXPECT_LT(guard, source.find(plain_step().source));  // the guard first, then the step
  EXPECT_EQ(steps->args().size(), 7u);                 // the same arguments as the reentrant kind's
}

TEST(FairLockStepsWire, GrantModeRegistersThroughItsLink) {
  auto core = unconnected_core(Handoff::grant);
  auto kind = std::make_shared<RecordTestKind>();
  struct Seen {
    const lua::Script* script;
    Strings keys, args, deregister;
    std::string id;
  };
  const Seen seen = core->call<Seen>([&](auto done) {
    FairAcquisition how;
    how.link = redisync::detail::grant_link(core, *kind, kName, kOwner);  // I/O thread
    how.link->listed = true;  // as the loop's start does
    auto link = how.link;
    auto steps = redisync::detail::fair_lock_steps(core, kind, kName, kOwner, 30s, how);
    done(nullptr, Seen{&steps->script(), steps->keys(), steps->args(), link->deregister, link->id});
  });
  const std::string field = core->id() + ":7";
  EXPECT_EQ(seen.script, &lua::with_publish_guard(lua::fair_lock_grant_acquire, true));
  EXPECT_EQ(
      seen.keys,
      (Strings{"orders:42", "redisson_lock_queue:{orders:42}", "redisson_lock_timeout:{orders:42}",
               "redisync_fair_grant:{orders:42}", "redisync_grant_mark:{orders:42}"}));
  // As in wake mode, then the grant id, registration period ("0": the grant channel is not
  // subscribed yet), attempt number and reentrant flag, then the guard's grant channel.
  EXPECT_EQ(seen.id.size(), 16u);
  EXPECT_EQ(seen.args, (Strings{"30000", field, "5000", "0", "1", seen.id, "0", "1", "0",
                                "redisync_grant__channel:{orders:42}:" + core->id(), "PUBLISH",
                                "redisson_lock__channel:{orders:42}:" + field}));
  EXPECT_EQ(seen.deregister, (Strings{"HDEL", "redisync_fair_grant:{orders:42}", field}));
}

TEST(FairLockStepsWire, GrantModeNonReentrantTakesTheGrantStepAndSaysSo) {
  auto core = unconnected_core(Handoff::grant);
  auto kind = std::make_shared<RecordTestKind>();
  const Strings args = core->call<Strings>([&](auto done) {
    FairAcquisition how;
    how.reentrant = false;
    how.link = redisync::detail::grant_link(core, *kind, kName, kOwner);
    auto steps = redisync::detail::fair_lock_steps(core, kind, kName, kOwner, 30s, how);
    EXPECT_NE(steps->script().name, "non_reentrant_fair_lock_acquire");
    done(nullptr, steps->args());
  });
  ASSERT_EQ(args.size(), 12u);
  EXPECT_EQ(args[8], "1");  // non-reentrant: a hold of the owner that is not its grant refuses
}

TEST(FairLockStepsWire, RefusedAttemptsRePollWithinAThirdOfTheAllowance) {
  auto core = unconnected_core(Handoff::wake);
  auto steps = steps_of(core, {});
  // The holder's PTTL, capped at a third of the 5 s allowance (and at most 1 s).
  EXPECT_EQ(steps->parse(integer_reply(25000)).ttl_ms, 1000);
  EXPECT_EQ(steps->parse(integer_reply(300)).ttl_ms, 300);
  // No estimate: 10 ms, doubling with each such poll, until one gives an estimate again.
  EXPECT_EQ(steps->parse(integer_reply(0)).ttl_ms, 10);
  EXPECT_EQ(steps->parse(integer_reply(0)).ttl_ms, 20);
  EXPECT_EQ(steps->parse(integer_reply(0)).ttl_ms, 40);
  EXPECT_EQ(steps->parse(integer_reply(500)).ttl_ms, 500);
  EXPECT_EQ(steps->parse(integer_reply(0)).ttl_ms, 10);
  redisync::Reply nil;
  nil.kind = redisync::Reply::Kind::nil;
  EXPECT_TRUE(steps->parse(nil).acquired);
}

}  // namespace
