// SPDX-License-Identifier: Apache-2.0
// The requests of the Lock, NonReentrantLock and FencedLock acquisition records (sync/locks/
// hash_lock_steps.h), pinned byte for byte in both handoff modes, with and without the
// starvation guard: a Redisson client on the same lock reads these keys and fields, so a
// refactoring of how the steps are assembled must leave them as they are. No server: the
// Client never connects (nothing is sent).
#include "sync/locks/hash_lock_steps.h"
#include "sync/locks/hold_count_steps.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "lua/scripts.h"
#include "lua/publish_guard.h"
#include "redisync/config.h"
#include "support/steps_wire.h"
#include "sync/acquire/grant.h"
#include "sync/client_core.h"

using namespace std::chrono_literals;
using redisync::Config;
using redisync::Duration;
using redisync::Handoff;
using redisync::detail::ClientCore;
using redisync::detail::HashLockSteps;
using redisync::test::RecordTestKind;
using redisync::test::unconnected_core;
using Strings = std::vector<std::string>;

namespace {

// What one attempt of `steps` would send: the script, KEYS and ARGV.
struct Request {
  const redisync::lua::Script* script;
  Strings keys;
  Strings args;
};
Request first_request(HashLockSteps& steps) {
  return {&steps.script(), steps.keys(), steps.args()};
}

constexpr std::int64_t kOwner = 7;
const std::string kName = "orders:42";

// Lock's wake-mode record for kName, owner kOwner, a 30 s lease.
std::shared_ptr<HashLockSteps> lock_steps(const std::shared_ptr<ClientCore>& core) {
  return redisync::detail::guarded_lock_steps(core, std::make_shared<RecordTestKind>(), kName,
                                              kOwner, 30s, redisync::lua::lock_acquire);
}

TEST(HashLockStepsWire, WakeModeLockWithTheStarvationGuard) {
  auto core = unconnected_core(Handoff::wake, 20ms);
  auto steps = lock_steps(core);
  const Request r = first_request(*steps);
  EXPECT_EQ(r.script, &redisync::lua::with_publish_guard(redisync::lua::lock_acquire, false));
  EXPECT_EQ(r.keys, (Strings{"orders:42", "redisync_lock_guard:{orders:42}"}));
  // lease, owner field, claim flag (not yet waited past the guard), claim expiry
  // (max(5 x 20 ms, 100 ms)), then the publish guard's command and channel.
  EXPECT_EQ(r.args, (Strings{"30000", core->id() + ":7", "0", "100", "PUBLISH",
                             "redisson_lock__channel:{orders:42}"}));
  EXPECT_EQ(steps->channel(), "redisson_lock__channel:{orders:42}");
}

TEST(HashLockStepsWire, WakeModeLockWithoutTheGuardIsRedissonsStep) {
  auto core = unconnected_core(Handoff::wake, 0ms);
  auto steps = lock_steps(core);
  const Request r = first_request(*steps);
  EXPECT_EQ(r.keys, (Strings{"orders:42"}));
  EXPECT_EQ(r.args, (Strings{"30000", core->id() + ":7", "0", "0", "PUBLISH",
                             "redisson_lock__channel:{orders:42}"}));
}

TEST(HashLockStepsWire, TheGuardClaimsOnceTheWaitPassedIt) {
  auto core = unconnected_core(Handoff::wake, 1ms);
  auto steps = lock_steps(core);
  std::this_thread::sleep_for(5ms);  // waited past the 1 ms guard
  const Strings args = steps->args();
  EXPECT_EQ(args[2], "1");
  EXPECT_EQ(args[3], "100");
  // A claimant's refused attempt re-polls within a quarter guard period (at least 1 ms).
  redisync::Reply held;
  held.kind = redisync::Reply::Kind::integer;
  held.integer = 25000;
  const auto result = steps->parse(held);
  EXPECT_FALSE(result.acquired);
  EXPECT_EQ(result.ttl_ms, 25000);
  EXPECT_EQ(result.shared_poll_ms, 1);
}

TEST(HashLockStepsWire, GrantModeRegistersThroughItsLink) {
  auto core = unconnected_core(Handoff::grant, 20ms);
  auto kind = std::make_shared<RecordTestKind>();
  const Request r = core->call<Request>([&](auto done) {
    auto link = redisync::detail::grant_link(core, *kind, kName, kOwner);  // I/O thread
    // As the loop's start does (AcquireLoop::start): listed before the first attempt; its
    // grant channel is not subscribed yet, so the attempt does not register.
    link->listed = true;
    auto steps =
        redisync::detail::grant_lock_steps(core, kind, kName, kOwner, 30s, std::nullopt, link);
    Request request = first_request(*steps);
    request.args.push_back(link->id);  // compared below
    done(nullptr, request);
  });
  EXPECT_EQ(r.script, &redisync::lua::with_publish_guard(redisync::lua::lock_grant_acquire, true));
  EXPECT_EQ(r.keys,
            (Strings{"orders:42", "redisync_lock_grant:{orders:42}",
                     "redisync_lock_grant_id:{orders:42}", "redisync_grant_mark:{orders:42}"}));
  // lease, owner field, grant id, registration period ("0": not registering), attempt
  // number, no token, reentrant, then the publish guard's grant channel, command and lock
  // channel.
  const std::string id = r.args.back();
  EXPECT_EQ(id.size(), 16u);
  EXPECT_EQ(Strings(r.args.begin(), r.args.end() - 1),
            (Strings{"30000", core->id() + ":7", id, "0", "1", "0", "0",
                     "redisync_grant__channel:{orders:42}:" + core->id(), "PUBLISH",
                     "redisson_lock__channel:{orders:42}"}));
}

TEST(HashLockStepsWire, GrantModeNonReentrantSaysSo) {
  auto core = unconnected_core(Handoff::grant, 20ms);
  auto kind = std::make_shared<RecordTestKind>();
  const Strings args = core->call<Strings>([&](auto done) {
    auto link = redisync::detail::grant_link(core, *kind, kName, kOwner);
    auto steps =
        redisync::detail::grant_lock_steps(core, kind, kName, kOwner, 30s, std::nullopt, link,
                                           redisync::detail::HashLockVariant::non_reentrant());
    done(nullptr, steps->args());
  });
  ASSERT_EQ(args.size(), 10u);
  EXPECT_EQ(args[5], "0");  // no token
  EXPECT_EQ(args[6], "1");  // non-reentrant
}

TEST(HashLockStepsWire, FencedLockWithATokenAndTheGuard) {
  auto core = unconnected_core(Handoff::wake, 20ms);
  auto token = std::make_shared<std::optional<std::uint64_t>>();
  auto steps = redisync::detail::guarded_lock_steps(
      core, std::make_shared<RecordTestKind>(), kName, kOwner, 30s,
      redisync::lua::fenced_lock_acquire, redisync::detail::HashLockVariant::fenced_lock(token));
  const Request r = first_request(*steps);
  EXPECT_EQ(r.script,
            &redisync::lua::with_publish_guard(redisync::lua::fenced_lock_acquire, false));
  EXPECT_EQ(r.keys, (Strings{"orders:42", "redisson_lock_token:{orders:42}",
                             "redisync_lock_guard:{orders:42}"}));
  // lease, owner field, acquire-with-token, then the guard's claim (ARGV[4..5]).
  EXPECT_EQ(r.args, (Strings{"30000", core->id() + ":7", "1", "0", "100", "PUBLISH",
                             "redisson_lock__channel:{orders:42}"}));
  // {-1, token}: acquired, the token stored; {PTTL, -1}: refused, nothing stored.
  redisync::Reply refused;
  refused.kind = redisync::Reply::Kind::array;
  refused.elements.resize(2);
  for (auto& e : refused.elements) e.kind = redisync::Reply::Kind::integer;
  refused.elements[0].integer = 2500;
  refused.elements[1].integer = -1;
  EXPECT_FALSE(steps->parse(refused).acquired);
  EXPECT_FALSE(token->has_value());
  redisync::Reply acquired = refused;
  acquired.elements[0].integer = -1;
  acquired.elements[1].integer = 42;
  EXPECT_TRUE(steps->parse(acquired).acquired);
  EXPECT_EQ(*token, 42u);
}

TEST(HashLockStepsWire, FencedLockWithoutTokenOrGuardSendsThreeArguments) {
  auto core = unconnected_core(Handoff::wake, 0ms);
  auto steps = redisync::detail::guarded_lock_steps(
      core, std::make_shared<RecordTestKind>(), kName, kOwner, 30s,
      redisync::lua::fenced_lock_acquire, redisync::detail::HashLockVariant::fenced_lock(nullptr));
  const Request r = first_request(*steps);
  EXPECT_EQ(r.keys, (Strings{"orders:42", "redisson_lock_token:{orders:42}"}));
  EXPECT_EQ(r.args, (Strings{"30000", core->id() + ":7", "0", "PUBLISH",
                             "redisson_lock__channel:{orders:42}"}));
}

TEST(HashLockStepsWire, GrantModeFencedLockAddsItsCounterAndAsksForTheToken) {
  auto core = unconnected_core(Handoff::grant, 20ms);
  auto kind = std::make_shared<RecordTestKind>();
  auto token = std::make_shared<std::optional<std::uint64_t>>();
  const Request r = core->call<Request>([&](auto done) {
    auto link = redisync::detail::grant_link(core, *kind, kName, kOwner);
    link->listed = true;
    auto steps =
        redisync::detail::grant_lock_steps(core, kind, kName, kOwner, 30s, std::nullopt, link,
                                           redisync::detail::HashLockVariant::fenced_lock(token));
    Request request = first_request(*steps);
    // A grant message's token reaches the acquisition.
    link->on_grant("17");
    done(nullptr, request);
  });
  EXPECT_EQ(
      r.keys,
      (Strings{"orders:42", "redisync_lock_grant:{orders:42}", "redisync_lock_grant_id:{orders:42}",
               "redisync_grant_mark:{orders:42}", "redisson_lock_token:{orders:42}"}));
  ASSERT_EQ(r.args.size(), 10u);
  EXPECT_EQ(r.args[5], "1");  // acquire-with-token
  EXPECT_EQ(r.args[6], "0");  // reentrant
  EXPECT_EQ(*token, 17u);
}

}  // namespace

namespace {

TEST(HashLockStepsWire, SpinLockSendsLocksStepWithoutGuardOrUndo) {
  auto core = unconnected_core(Handoff::grant, 20ms);  // neither mode nor guard changes it
  auto steps = redisync::detail::spin_lock_steps(core, std::make_shared<RecordTestKind>(), kName,
                                                 kOwner, 30s);
  EXPECT_EQ(&steps->script(), &redisync::lua::lock_acquire);
  EXPECT_EQ(steps->keys(), (Strings{"orders:42"}));
  EXPECT_EQ(steps->args(), (Strings{"30000", core->id() + ":7"}));
  EXPECT_FALSE(steps->undoable());
  EXPECT_TRUE(steps->can_settle());
}

}  // namespace
