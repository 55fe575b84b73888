// Direct handoff (src/sync/acquire/grant.h): what a grant message means for a waiting acquisition
// (AcquireFsm::grant_heard) and how the registry routes it (route_grant, GrantRegistry), on a
// fake clock, without a server.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/acquire_fsm_steps.h"
#include "sync/acquire/acquire_fsm.h"
#include "sync/acquire/grant.h"

using namespace std::chrono_literals;
using redisync::Duration;
using redisync::sync::AcquireAction;
using redisync::sync::AcquireFsm;
using redisync::sync::AttemptResult;
using redisync::sync::Clock;
using redisync::sync::GrantNews;
using redisync::sync::GrantRegistry;
using redisync::sync::GrantRoute;

namespace {

using Kind = AcquireAction::Kind;
const Clock::time_point t0 = Clock::time_point{} + 1000s;
constexpr AttemptResult kHeld{false, 5000};
constexpr Duration kGrantLease{2000};

AcquireFsm::Settings settings(std::optional<Duration> wait = std::nullopt) {
  AcquireFsm::Settings s;
  s.retry_attempts = 3;
  s.can_recheck = true;
  s.can_settle = true;
  if (wait) s.deadline = t0 + *wait;
  return s;
}

AcquireFsm asleep(AcquireFsm::Settings s = settings()) {
  return redisync::test::asleep_fsm(s, t0, kHeld);
}

struct Recorder : redisync::sync::GrantWaiter {
  std::vector<std::pair<GrantNews, std::string>> heard;
  std::vector<std::optional<Duration>> leases;
  void grant_news(GrantNews news, std::optional<Duration> grant_lease,
                  const std::string& rest) override {
    heard.emplace_back(news, rest);
    leases.push_back(grant_lease);
  }
};

const std::string ch = "redisync_grant__channel:{n}";

}  // namespace

TEST(GrantFsm, AGrantForMeCompletesASleepingWaiter) {
  auto fsm = asleep();
  EXPECT_EQ(fsm.grant_heard(t0 + 1ms, GrantNews::for_me, kGrantLease, t0).kind, Kind::succeed);
  EXPECT_TRUE(fsm.done());
}

TEST(GrantFsm, AGrantForMeWinsOverAnAttemptInFlight) {
  AcquireFsm fsm = asleep();
  EXPECT_EQ(fsm.woken(t0).kind, Kind::attempt);  // a wake-up sent an attempt
  EXPECT_EQ(fsm.grant_heard(t0, GrantNews::for_me, kGrantLease, t0).kind, Kind::succeed);
  // The attempt's late reply changes nothing.
  EXPECT_EQ(fsm.attempt_answered(t0, kHeld, true, false).kind, Kind::none);
}

TEST(GrantFsm, AGrantAfterTheWaitEndedIsIgnored) {
  AcquireFsm fsm(settings(10ms));
  EXPECT_EQ(fsm.start().kind, Kind::attempt);
  EXPECT_EQ(fsm.attempt_answered(t0 + 20ms, kHeld, true, false).kind, Kind::fail);
  EXPECT_EQ(fsm.grant_heard(t0 + 21ms, GrantNews::for_me, kGrantLease, t0).kind, Kind::none);
}

TEST(GrantFsm, AGrantToAnotherRearmsTheSleepToAboutTheGrantLease) {
  auto fsm = asleep();
  const auto a = fsm.grant_heard(t0, GrantNews::for_other, kGrantLease, t0);
  EXPECT_EQ(a.kind, Kind::sleep);
  EXPECT_GE(a.bound, kGrantLease);
  EXPECT_LE(a.bound, kGrantLease + kGrantLease / 5);
  EXPECT_FALSE(fsm.done());
  // ... never later than the sleep was to end (a stream of grants to others must not keep
  // a waiter from ever attempting).
  EXPECT_EQ(fsm.grant_heard(t0 + 10ms, GrantNews::for_other, kGrantLease, t0).kind, Kind::none);
  auto short_wait = asleep(settings(500ms));
  EXPECT_EQ(short_wait.grant_heard(t0 + 100ms, GrantNews::for_other, kGrantLease, t0).kind,
            Kind::none);
}

TEST(GrantFsm, AGrantForMeTooLongAfterTheRegistrationIsTakenByAnAttempt) {
  // Only registered_sent + grant lease is known of the granted hold's lease: with less than a
  // third of it left, the waiter attempts (the attempt takes the grant with the full lease).
  auto fsm = asleep();
  EXPECT_EQ(fsm.grant_heard(t0 + 1400ms, GrantNews::for_me, kGrantLease, t0).kind, Kind::attempt);
  EXPECT_FALSE(fsm.done());
  // While that attempt is in flight, another message changes nothing.
  EXPECT_EQ(fsm.grant_heard(t0 + 1400ms, GrantNews::for_me, kGrantLease, t0).kind, Kind::none);
  // ... except that an attempt that ran before the grant is followed by another at once.
  EXPECT_EQ(fsm.attempt_answered(t0 + 1401ms, kHeld, true, false).kind, Kind::attempt);
  EXPECT_EQ(fsm.attempt_answered(t0 + 1402ms, {true, 0}, true, false).kind, Kind::succeed);
  // Never registered: the same.
  auto unregistered = asleep();
  EXPECT_EQ(unregistered.grant_heard(t0, GrantNews::for_me, kGrantLease, std::nullopt).kind,
            Kind::attempt);
}

TEST(GrantFsm, AGrantToAnotherLeavesAnAttemptInFlightAlone) {
  AcquireFsm fsm = asleep();
  EXPECT_EQ(fsm.woken(t0).kind, Kind::attempt);
  EXPECT_EQ(fsm.grant_heard(t0, GrantNews::for_other, kGrantLease, t0).kind, Kind::none);
  EXPECT_EQ(fsm.attempt_answered(t0, kHeld, true, false).kind, Kind::sleep);
}

TEST(GrantFsm, AMaybeStaleGrantMakesASleeperAttempt) {
  auto fsm = asleep();
  EXPECT_EQ(fsm.grant_heard(t0, GrantNews::maybe_stale, kGrantLease, t0).kind, Kind::attempt);
  EXPECT_FALSE(fsm.done());
  // While an attempt is in flight, that attempt tells.
  EXPECT_EQ(fsm.grant_heard(t0, GrantNews::maybe_stale, kGrantLease, t0).kind, Kind::none);
}

TEST(GrantRoute, Decisions) {
  EXPECT_EQ(redisync::sync::route_grant(true, false, 0), GrantRoute::take);
  EXPECT_EQ(redisync::sync::route_grant(true, false, 1), GrantRoute::verify);
  EXPECT_EQ(redisync::sync::route_grant(false, true, 0), GrantRoute::note);
  EXPECT_EQ(redisync::sync::route_grant(false, true, 2), GrantRoute::note);
  EXPECT_EQ(redisync::sync::route_grant(false, false, 1), GrantRoute::swallow);
  EXPECT_EQ(redisync::sync::route_grant(false, false, 0), GrantRoute::ignore);
}

TEST(GrantRegistry, AGrantGoesToTheNamedWaiterAndTheOthersHearOfIt) {
  GrantRegistry reg;
  Recorder a, b, other_lock;
  ASSERT_TRUE(reg.add(ch, "c:1", &a));
  ASSERT_TRUE(reg.add(ch, "c:2", &b));
  ASSERT_TRUE(reg.add("redisync_grant__channel:{m}", "c:1", &other_lock));
  EXPECT_FALSE(reg.add(ch, "c:1", &b));  // one acquisition per owner and lock
  reg.on_message(ch, "c:1 300 42");
  ASSERT_EQ(a.heard.size(), 1u);
  EXPECT_EQ(a.heard[0].first, GrantNews::for_me);
  EXPECT_EQ(a.heard[0].second, "42");
  EXPECT_EQ(a.leases[0], Duration{300});  // the releaser's grant lease, not a setting here
  ASSERT_EQ(b.heard.size(), 1u);
  EXPECT_EQ(b.heard[0].first, GrantNews::for_other);
  EXPECT_EQ(b.leases[0], Duration{300});
  EXPECT_TRUE(other_lock.heard.empty());
}

TEST(GrantRegistry, AGrantTakenByAnAttemptIsSwallowedThenVerified) {
  GrantRegistry reg;
  Recorder a, next;
  ASSERT_TRUE(reg.add(ch, "c:1", &a));
  reg.acquired(ch, "c:1", /*took_grant=*/true);  // the attempt found the grant first
  EXPECT_EQ(reg.expected(ch, "c:1"), 1);
  // The same owner waits again before the old grant's message came: it must not take it.
  ASSERT_TRUE(reg.add(ch, "c:1", &next));
  reg.on_message(ch, "c:1 2000");
  ASSERT_EQ(next.heard.size(), 1u);
  EXPECT_EQ(next.heard[0].first, GrantNews::maybe_stale);
  EXPECT_EQ(reg.expected(ch, "c:1"), 0);
  reg.on_message(ch, "c:1 2000");  // a later grant is taken
  ASSERT_EQ(next.heard.size(), 2u);
  EXPECT_EQ(next.heard[1].first, GrantNews::for_me);
}

TEST(GrantRegistry, AGrantRacingAGiveUp) {
  GrantRegistry reg;
  Recorder a;
  // The message comes while the give-up step is on its way: nothing is expected after it.
  ASSERT_TRUE(reg.add(ch, "c:1", &a));
  reg.giving_up(ch, "c:1");
  reg.on_message(ch, "c:1 2000");
  reg.gave_up(ch, "c:1", /*released_grant=*/true);
  EXPECT_EQ(reg.expected(ch, "c:1"), 0);
  EXPECT_EQ(reg.size(), 0u);
  EXPECT_TRUE(a.heard.empty());
  // The give-up released a grant whose message is still to come: swallowed when it comes.
  ASSERT_TRUE(reg.add(ch, "c:1", &a));
  reg.giving_up(ch, "c:1");
  reg.gave_up(ch, "c:1", true);
  EXPECT_EQ(reg.expected(ch, "c:1"), 1);
  reg.on_message(ch, "c:1 2000");
  EXPECT_EQ(reg.expected(ch, "c:1"), 0);
  EXPECT_TRUE(a.heard.empty());
  // A give-up that found no grant expects nothing.
  ASSERT_TRUE(reg.add(ch, "c:1", &a));
  reg.giving_up(ch, "c:1");
  reg.gave_up(ch, "c:1", false);
  EXPECT_EQ(reg.expected(ch, "c:1"), 0);
}

TEST(GrantRegistry, AnAcquisitionWaitsFromItsListingUntilItAcquiresOrGivesUp) {
  GrantRegistry reg;
  Recorder a;
  EXPECT_FALSE(reg.waiting(ch, "c:1"));
  ASSERT_TRUE(reg.add(ch, "c:1", &a));
  EXPECT_TRUE(reg.waiting(ch, "c:1"));
  EXPECT_FALSE(reg.waiting(ch, "c:2"));
  reg.acquired(ch, "c:1", false);
  EXPECT_FALSE(reg.waiting(ch, "c:1"));
  ASSERT_TRUE(reg.add(ch, "c:1", &a));
  reg.giving_up(ch, "c:1");  // listed until its step answers, but no longer waiting
  EXPECT_FALSE(reg.waiting(ch, "c:1"));
}

TEST(GrantRegistry, SomeoneElsesGrantIsIgnored) {
  GrantRegistry reg;
  reg.on_message(ch, "java:1 2000");
  EXPECT_EQ(reg.size(), 0u);
  EXPECT_EQ(reg.expected(ch, "java:1"), 0);
}

TEST(GrantRegistry, TheRegistrationsOfListedWaitsAreRemovedAtClose) {
  GrantRegistry reg;
  Recorder a, b, c;
  ASSERT_TRUE(reg.add(ch, "c:1", &a, {"ZREM", "redisync_lock_grant:{n}", "c:1"}));
  ASSERT_TRUE(reg.add(ch, "c:2", &b, {"HDEL", "redisync_fair_grant:{n}", "c:2"}));
  ASSERT_TRUE(reg.add(ch, "c:3", &c, {"ZREM", "redisync_lock_grant:{n}", "c:3"}));
  reg.acquired(ch, "c:3", false);  // no longer waiting: nothing to remove
  reg.giving_up(ch, "c:2");        // its give-up step removes it, and so does the close
  const auto commands = reg.deregistrations();
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_EQ(commands[0], (std::vector<std::string>{"ZREM", "redisync_lock_grant:{n}", "c:1"}));
  EXPECT_EQ(commands[1], (std::vector<std::string>{"HDEL", "redisync_fair_grant:{n}", "c:2"}));
}

TEST(GrantMessage, FieldLeaseAndRest) {
  using redisync::sync::parse_grant_message;
  auto m = parse_grant_message("c:1 300");
  EXPECT_EQ(m.field, "c:1");
  EXPECT_EQ(m.grant_lease, Duration{300});
  EXPECT_EQ(m.rest, "");
  m = parse_grant_message("c:1:write 2000 17");
  EXPECT_EQ(m.field, "c:1:write");
  EXPECT_EQ(m.grant_lease, Duration{2000});
  EXPECT_EQ(m.rest, "17");
  // No lease, or one no release of ours would have sent: unknown, never a guess.
  for (const char* bad : {"c:1", "c:1 ", "c:1 abc", "c:1 0", "c:1 -5", "c:1 12x", "c:1 99999999999"}) {
    EXPECT_EQ(parse_grant_message(bad).grant_lease, std::nullopt) << bad;
    EXPECT_EQ(parse_grant_message(bad).field, "c:1") << bad;
  }
}

TEST(GrantRegistry, AGrantWhoseLeaseIsUnknownIsCheckedByAnAttempt) {
  // The waiter cannot know how long the grant lasts: it must not take it as held, it asks
  // (an attempt takes a grant with the waiter's own lease, reply -3).
  GrantRegistry reg;
  Recorder a;
  ASSERT_TRUE(reg.add(ch, "c:1", &a));
  reg.on_message(ch, "c:1");
  ASSERT_EQ(a.heard.size(), 1u);
  EXPECT_EQ(a.heard[0].first, GrantNews::maybe_stale);
  EXPECT_EQ(a.leases[0], std::nullopt);
}
