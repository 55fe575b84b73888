// SPDX-License-Identifier: Apache-2.0
// Direct handoff (src/sync/acquire/grant.h): what a grant message means for a waiting acquisition
// (AcquireFsm::grant_heard) and how the registry routes it (route_grant, GrantRegistry), on a
// fake clock, without a server.
#include "sync/acquire/grant.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "support/acquire_fsm_steps.h"
#include "sync/acquire/acquire_fsm.h"

using namespace std::chrono_literals;
using redisync::Duration;
using redisync::sync::AcquireAction;
using redisync::sync::AcquireFsm;
using redisync::sync::AttemptResult;
using redisync::sync::Clock;
using redisync::sync::GrantNews;
using redisync::sync::GrantRegistry;
using redisync::sync::GrantLink;
using redisync::sync::GrantMessage;
using redisync::sync::parse_grant_message;
using redisync::sync::kGrantRegistration;

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
  std::vector<std::pair<GrantNews, std::string>> heard;  // news, rest
  std::vector<redisync::sync::GrantMessage> messages;
  std::function<void()> on_news;  // runs after recording
  void grant_news(GrantNews news, const redisync::sync::GrantMessage& message) override {
    heard.emplace_back(news, message.rest);
    messages.push_back(message);
    if (on_news) on_news();
  }
};

const std::string ch = "redisync_grant__channel:{n}";

// The grant link of an acquisition of `field` on `channel`, with grant id `id` (the registry
// lists an acquisition by its link, and finds it again by channel and field).
std::shared_ptr<GrantLink> listed(const std::string& channel, const std::string& field,
                                  const std::string& id = "",
                                  std::vector<std::string> deregister = {}) {
  auto link = std::make_shared<GrantLink>();
  link->channel = channel;
  link->field = field;
  if (!id.empty()) link->id = id;
  link->deregister = std::move(deregister);
  return link;
}

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
  // Only registered_sent + grant lease is known of the granted hold's lease: with less than
  // two thirds of it left, the waiter attempts (the attempt takes the grant with the full
  // lease); the extension of a grant taken at once would have less than that to land in.
  EXPECT_EQ(asleep().grant_heard(t0 + 665ms, GrantNews::for_me, kGrantLease, t0).kind,
            Kind::succeed);
  auto fsm = asleep();
  EXPECT_EQ(fsm.grant_heard(t0 + 666ms, GrantNews::for_me, kGrantLease, t0).kind, Kind::attempt);
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

TEST(GrantFsm, AGrantForMeIsTakenByAnAttemptWhileRepliesComeLate) {
  // Replies come 500 ms late (a Client handed tens of thousands of grants at once): the
  // extension of a grant taken at once 200 ms after its registration would land with less
  // than two thirds of the grant lease left, or after it: attempt instead.
  EXPECT_EQ(asleep().grant_heard(t0 + 200ms, GrantNews::for_me, kGrantLease, t0, 100ms).kind,
            Kind::succeed);
  EXPECT_EQ(asleep().grant_heard(t0 + 200ms, GrantNews::for_me, kGrantLease, t0, 500ms).kind,
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

TEST(GrantRegistry, AGrantGoesToTheNamedAcquisitionAndTheOthersHearOfIt) {
  GrantRegistry reg;
  Recorder a, b, other_lock;
  ASSERT_TRUE(reg.add(listed(ch, "c:1", "aaaa"), &a));
  ASSERT_TRUE(reg.add(listed(ch, "c:2", "bbbb"), &b));
  ASSERT_TRUE(reg.add(listed("redisync_grant__channel:{m}", "c:1", "cccc"), &other_lock));
  // One listed acquisition per owner and lock.
  EXPECT_FALSE(reg.add(listed(ch, "c:1", "dddd"), &b));
  reg.on_message(ch, "c:1 300 aaaa 7 42");
  ASSERT_EQ(a.heard.size(), 1u);
  EXPECT_EQ(a.heard[0].first, GrantNews::for_me);
  EXPECT_EQ(a.heard[0].second, "42");
  EXPECT_EQ(a.messages[0].grant_lease, Duration{300});  // the releaser's, not a setting here
  EXPECT_EQ(a.messages[0].attempt, 7u);
  ASSERT_EQ(b.heard.size(), 1u);
  EXPECT_EQ(b.heard[0].first, GrantNews::for_other);
  EXPECT_TRUE(other_lock.heard.empty());
}

TEST(GrantRegistry, AGrantToAnEarlierAcquisitionOfTheSameOwnerIsNotTaken) {
  // The owner's earlier acquisition took its grant by an attempt, or gave it back, and a new
  // one waits now: the old grant's message names the old id.
  GrantRegistry reg;
  Recorder next;
  ASSERT_TRUE(reg.add(listed(ch, "c:1", "0ld0"), &next));
  reg.remove(*listed(ch, "c:1"));
  ASSERT_TRUE(reg.add(listed(ch, "c:1", "0e00"), &next));
  reg.on_message(ch, "c:1 2000 0ld0 3");  // not even a valid id: someone else's
  reg.on_message(ch, "c:1 2000 abcd 3");
  ASSERT_EQ(next.heard.size(), 2u);
  EXPECT_EQ(next.heard[0].first, GrantNews::for_other);
  EXPECT_EQ(next.heard[1].first, GrantNews::for_other);
  reg.on_message(ch, "c:1 2000 0e00 4");  // its own
  ASSERT_EQ(next.heard.size(), 3u);
  EXPECT_EQ(next.heard[2].first, GrantNews::for_me);
}

TEST(GrantRegistry, AnAcquisitionGivingUpHearsNothing) {
  // Its give-up step releases a grant made to it (the grant mark names it): the message
  // changes nothing here, before or after the step's answer.
  GrantRegistry reg;
  Recorder a;
  ASSERT_TRUE(reg.add(listed(ch, "c:1", "aaaa"), &a));
  reg.giving_up(*listed(ch, "c:1"));
  reg.on_message(ch, "c:1 2000 aaaa 2");
  reg.remove(*listed(ch, "c:1"));
  reg.on_message(ch, "c:1 2000 aaaa 2");
  EXPECT_EQ(reg.size(), 0u);
  EXPECT_TRUE(a.heard.empty());
}

TEST(GrantRegistry, AnAcquisitionWaitsFromItsListingUntilItAcquiresOrGivesUp) {
  GrantRegistry reg;
  Recorder a;
  EXPECT_FALSE(reg.waiting(ch, "c:1"));
  ASSERT_TRUE(reg.add(listed(ch, "c:1", "aaaa"), &a));
  EXPECT_TRUE(reg.waiting(ch, "c:1"));
  EXPECT_FALSE(reg.waiting(ch, "c:2"));
  reg.remove(*listed(ch, "c:1"));
  EXPECT_FALSE(reg.waiting(ch, "c:1"));
  ASSERT_TRUE(reg.add(listed(ch, "c:1", "aaaa"), &a));
  reg.giving_up(*listed(ch, "c:1"));  // listed until its step answers, but no longer waiting
  EXPECT_FALSE(reg.waiting(ch, "c:1"));
}

TEST(GrantRegistry, AWaiterLeavingWhileAMessageIsDeliveredHearsNothingMore) {
  // The registry holds each listed acquisition's link (its keys point into it). One waiter,
  // told of the grant, ends another's listing, whose link only the registry held: the
  // delivery goes on without it (AddressSanitizer sees a key read after its link is gone).
  GrantRegistry reg;
  Recorder a, b, c;
  ASSERT_TRUE(reg.add(listed(ch, "c:1", "aaaa"), &a));
  ASSERT_TRUE(reg.add(listed(ch, "c:2", "bbbb"), &b));
  ASSERT_TRUE(reg.add(listed(ch, "c:3", "cccc"), &c));
  a.on_news = [&] { reg.remove(*listed(ch, "c:3")); };
  b.on_news = a.on_news;
  reg.on_message(ch, "c:1 2000 aaaa 2");
  EXPECT_EQ(a.heard.size(), 1u);
  EXPECT_EQ(b.heard.size(), 1u);
  EXPECT_TRUE(c.heard.empty());
  EXPECT_EQ(reg.size(), 2u);
}

TEST(GrantRegistry, SomeoneElsesGrantIsIgnored) {
  GrantRegistry reg;
  reg.on_message(ch, "java:1 2000 aaaa 1");
  EXPECT_EQ(reg.size(), 0u);
}

TEST(GrantRegistry, TheRegistrationsOfListedWaitsAreRemovedAtClose) {
  GrantRegistry reg;
  Recorder a, b, c;
  ASSERT_TRUE(reg.add(listed(ch, "c:1", "aaaa", {"ZREM", "redisync_lock_grant:{n}", "c:1"}), &a));
  ASSERT_TRUE(reg.add(listed(ch, "c:2", "bbbb", {"HDEL", "redisync_fair_grant:{n}", "c:2"}), &b));
  ASSERT_TRUE(reg.add(listed(ch, "c:3", "cccc", {"ZREM", "redisync_lock_grant:{n}", "c:3"}), &c));
  reg.remove(*listed(ch, "c:3"));     // no longer waiting: nothing to remove
  reg.giving_up(*listed(ch, "c:2"));  // its give-up step removes it, and so does the close
  const auto commands = reg.deregistrations();
  ASSERT_EQ(commands.size(), 2u);
  EXPECT_EQ(commands[0], (std::vector<std::string>{"ZREM", "redisync_lock_grant:{n}", "c:1"}));
  EXPECT_EQ(commands[1], (std::vector<std::string>{"HDEL", "redisync_fair_grant:{n}", "c:2"}));
}

TEST(GrantMessage, FieldLeaseIdAttemptAndRest) {
  auto m = parse_grant_message("c:1 300 00ff 9");
  EXPECT_EQ(m.field, "c:1");
  EXPECT_EQ(m.grant_lease, Duration{300});
  EXPECT_EQ(m.id, "00ff");
  EXPECT_EQ(m.attempt, 9u);
  EXPECT_EQ(m.rest, "");
  EXPECT_TRUE(m.complete());
  m = parse_grant_message("c:1:write 2000 abc1 12 17");
  EXPECT_EQ(m.field, "c:1:write");
  EXPECT_EQ(m.rest, "17");
  EXPECT_TRUE(m.complete());
  // A part missing, or one no release of ours would have sent: unknown, never a guess.
  for (const char* bad : {"c:1", "c:1 ", "c:1 abc", "c:1 0 ab 1", "c:1 -5 ab 1", "c:1 12x ab 1",
                          "c:1 99999999999 ab 1", "c:1 300", "c:1 300 XY 1", "c:1 300 ab",
                          "c:1 300 ab 0", "c:1 300 ab x"}) {
    EXPECT_FALSE(parse_grant_message(bad).complete()) << bad;
    EXPECT_EQ(parse_grant_message(bad).field, "c:1") << bad;
  }
}

TEST(GrantRegistry, AnIncompleteGrantMessageIsCheckedByAnAttempt) {
  // The waiter cannot know how long the grant lasts or which registration it used: it must
  // not take it as held, it asks (an attempt takes its grant, reply -3, when the mark names it).
  GrantRegistry reg;
  Recorder a;
  ASSERT_TRUE(reg.add(listed(ch, "c:1", "aaaa"), &a));
  reg.on_message(ch, "c:1 nonsense aaaa 1");
  ASSERT_EQ(a.heard.size(), 1u);
  EXPECT_EQ(a.heard[0].first, GrantNews::maybe_stale);
}

TEST(GrantLink, AGrantCountsFromTheSendOfTheAttemptWhoseRegistrationItUsed) {
  GrantLink link;
  link.listed = true;
  // Not subscribed to the grant channel yet: no registration, so no grant can name it.
  auto first = link.next_attempt(std::nullopt);
  EXPECT_EQ(first.id, link.id);
  EXPECT_EQ(first.period, "0");
  EXPECT_EQ(first.attempt, "1");
  link.refused();
  EXPECT_EQ(link.grant_made_after(1), std::nullopt);
  // Attempts 2 and 3 register; 2 is refused (it registered), 3 is on its way.
  EXPECT_EQ(link.number_attempt(Duration{10000}, t0).attempt, "2");
  link.refused();
  EXPECT_EQ(link.number_attempt(Duration{10000}, t0 + 700ms).period, "10000");
  EXPECT_EQ(link.grant_made_after(2), t0);  // a grant on 2's registration: made after t0
  EXPECT_EQ(link.grant_made_after(3), t0 + 700ms);
  // 3 refused too: a grant on 2's registration was gone when 3 ran (it would have taken it).
  link.refused();
  EXPECT_EQ(link.grant_made_after(2), std::nullopt);
  EXPECT_EQ(link.grant_made_after(3), t0 + 700ms);
  EXPECT_EQ(link.grant_made_after(9), std::nullopt);  // never sent
  // Another acquisition of the owner is listed: this one registers nowhere (so it can take
  // no grant) but sends its own id, so that it waits for a grant to the listed one instead of
  // re-entering it (grant_pending_for_another).
  GrantLink unlisted;
  const auto none = unlisted.number_attempt(Duration{10000}, t0);
  EXPECT_EQ(none.id, unlisted.id);
  EXPECT_EQ(none.period, "0");
}

TEST(GrantLink, AGrantCountsFromItsPublicationWhenThatIsKnownAndLater) {
  GrantLink link;
  link.listed = true;
  EXPECT_EQ(link.number_attempt(Duration{10000}, t0).attempt, "1");
  link.refused();
  GrantMessage message = parse_grant_message("c:1 2000 " + link.id + " 1");
  EXPECT_EQ(link.grant_made_after(message), t0);  // undated: the registration's send
  message.published_after = t0 + 5s;                // dated by a heartbeat answered before it
  EXPECT_EQ(link.grant_made_after(message), t0 + 5s);
  message.published_after = t0 - 1s;  // an older heartbeat adds nothing
  EXPECT_EQ(link.grant_made_after(message), t0);
  // A stale grant stays stale however fresh its message: a later attempt was refused, so the
  // grant was gone when that attempt ran.
  EXPECT_EQ(link.number_attempt(Duration{10000}, t0 + 1s).attempt, "2");
  link.refused();
  message.published_after = t0 + 5s;
  EXPECT_EQ(link.grant_made_after(message), std::nullopt);
}

TEST(GrantLink, ARegistrationIsRefreshedBeforeItLapsesAndNoMoreOftenAtEveryGrantLease) {
  // A registration lives kGrantRegistration (10 s) unless refreshed. A grant lease over 30 s
  // once spaced the refreshes a third of it apart (20 s at 60 s): the registration lapsed for
  // half of each wait, and releases passed over the waiter. A short grant lease once made
  // every waiter re-attempt every third of it (issue 34); how recent a grant is comes from the
  // pub/sub heartbeat now (GrantMessage::published_after).
  for (const auto lease : {Duration{100}, Duration{2000}, Duration{30000}, Duration{31000},
                           Duration{45000}, Duration{60000}}) {
    GrantLink link;
    link.listed = true;
    link.grant_lease = lease;
    EXPECT_EQ(link.cap_wait(-1), kGrantRegistration.count() / 3) << lease.count() << " ms";
    EXPECT_EQ(link.cap_wait(120000), kGrantRegistration.count() / 3) << lease.count() << " ms";
    EXPECT_EQ(link.cap_wait(700), 700) << "a lock's own shorter wait stands";
    link.listed = false;  // not registered: nothing to refresh, the lock's own wait stands
    EXPECT_EQ(link.cap_wait(120000), 120000);
  }
}

TEST(GrantLink, IdsAreHexAndDiffer) {
  const auto a = redisync::sync::new_grant_id(), b = redisync::sync::new_grant_id();
  EXPECT_EQ(a.size(), 16u);
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(GrantExtension, SentAThirdOfTheGrantLeaseAfterTheGrantUnlessThatIsTooLate) {
  using redisync::sync::grant_extension_delay;
  const Duration lease{30000};
  // A third of the 2 s grant lease after the grant's date; at once when that is past.
  EXPECT_EQ(grant_extension_delay(t0 + 100ms, t0, kGrantLease, lease, Duration{0}), 566ms);
  EXPECT_EQ(grant_extension_delay(t0 + 700ms, t0, kGrantLease, lease, Duration{0}), Duration{0});
  // A normal lease shorter than the grant lease is set at once: a holder killed in its
  // section frees the lock within its own lease.
  EXPECT_EQ(grant_extension_delay(t0 + 100ms, t0, kGrantLease, 500ms, Duration{0}), Duration{0});
  // Replies already come more than 100 ms (a twentieth) late: waiting would only put the
  // extension behind more of them (100,000 grants at once lost thousands of holds that way).
  EXPECT_EQ(grant_extension_delay(t0 + 100ms, t0, kGrantLease, lease, 100ms), 566ms);
  EXPECT_EQ(grant_extension_delay(t0 + 100ms, t0, kGrantLease, lease, 101ms), Duration{0});
}
