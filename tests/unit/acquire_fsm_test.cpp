// SPDX-License-Identifier: Apache-2.0
// The acquire loop's state machine (src/sync/acquire/acquire_fsm.h) driven by a fake clock and
// scripted replies: each decision of the wait, without a Redis server.
#include <gtest/gtest.h>

#include "support/acquire_fsm_steps.h"
#include "sync/acquire/acquire_fsm.h"

using namespace std::chrono_literals;
using redisync::Duration;
using redisync::sync::AcquireAction;
using redisync::sync::AcquireFsm;
using redisync::sync::AttemptError;
using redisync::sync::AttemptResult;
using redisync::sync::Clock;

namespace {

using Kind = AcquireAction::Kind;
using Error = AcquireAction::Error;
const Clock::time_point t0 = Clock::time_point{} + 1000s;
constexpr AttemptResult kHeld{false, 30000};
constexpr AttemptResult kAcquired{true, -1};

AcquireFsm::Settings waiting_forever() {
  AcquireFsm::Settings s;
  s.retry_attempts = 3;
  s.retry_interval = 1500ms;
  s.can_recheck = true;
  s.can_settle = true;
  s.subscription_timeout = 7500ms;
  s.poll_interval = 100ms;
  return s;
}

AcquireFsm::Settings waiting_for(Duration wait) {
  auto s = waiting_forever();
  s.deadline = t0 + wait;
  return s;
}

// A waiter that found the lock held and is asleep on its confirmed subscription.
AcquireFsm asleep(AcquireFsm::Settings s = waiting_forever()) {
  return redisync::test::asleep_fsm(s, t0, kHeld);
}

}  // namespace

TEST(AcquireFsm, FreeLockIsOneAttempt) {
  AcquireFsm fsm(waiting_forever());
  EXPECT_EQ(fsm.start().kind, Kind::attempt);
  EXPECT_EQ(fsm.attempt_answered(t0, kAcquired, false, false).kind, Kind::succeed);
  EXPECT_TRUE(fsm.done());
}

TEST(AcquireFsm, HeldLockSubscribesThenAsksAgainBeforeSleeping) {
  AcquireFsm fsm(waiting_forever());
  fsm.start();
  auto sub = fsm.attempt_answered(t0, kHeld, false, false);
  ASSERT_EQ(sub.kind, Kind::subscribe);
  EXPECT_EQ(sub.bound, 7500ms);
  // The second attempt covers a release published before the subscription was confirmed.
  EXPECT_EQ(fsm.subscription_done(t0 + 1ms, true).kind, Kind::attempt);
  auto sleep = fsm.attempt_answered(t0 + 2ms, kHeld, true, false);
  EXPECT_EQ(sleep.kind, Kind::sleep);
  EXPECT_EQ(sleep.bound, 30000ms);  // the holder's TTL
}

TEST(AcquireFsm, AReleaseMessageLeadsToExactlyOneAttempt) {
  auto fsm = asleep();
  EXPECT_EQ(fsm.woken(t0 + 5ms).kind, Kind::attempt);
  // The sleep's timer, fired just as the message came, and a second message: no more attempts
  // while the first is in flight.
  EXPECT_EQ(fsm.timer_fired(t0 + 5ms).kind, Kind::none);
  EXPECT_EQ(fsm.woken(t0 + 6ms).kind, Kind::none);
  EXPECT_EQ(fsm.attempt_answered(t0 + 7ms, kAcquired, true, false).kind, Kind::succeed);
}

TEST(AcquireFsm, AMessageDuringTheAttemptLeadsToOneMoreAttemptNotASleep) {
  AcquireFsm fsm = asleep();
  fsm.woken(t0 + 1ms);
  EXPECT_EQ(fsm.attempt_answered(t0 + 2ms, kHeld, true, /*wakeup_pending=*/true).kind,
            Kind::attempt);
}

TEST(AcquireFsm, TheHoldersTtlRunningOutLeadsToAnAttempt) {
  auto fsm = asleep();
  EXPECT_EQ(fsm.timer_fired(t0 + 30s).kind, Kind::attempt);
}

TEST(AcquireFsm, SleepIsBoundedByTheDeadlineAndTheDeadlineEndsTheWait) {
  AcquireFsm fsm(waiting_for(200ms));
  fsm.start();
  fsm.attempt_answered(t0, kHeld, false, false);
  fsm.subscription_done(t0, true);
  auto sleep = fsm.attempt_answered(t0 + 10ms, kHeld, true, false);
  EXPECT_EQ(sleep.kind, Kind::sleep);
  EXPECT_EQ(sleep.bound, 190ms);
  EXPECT_EQ(fsm.timer_fired(t0 + 200ms).kind, Kind::attempt);
  auto end = fsm.attempt_answered(t0 + 201ms, kHeld, true, false);
  EXPECT_EQ(end.kind, Kind::fail);
  EXPECT_EQ(end.error, Error::none);  // plain "not acquired"
}

TEST(AcquireFsm, ALostReplyLeadsToARecheckNeverASecondAttempt) {
  AcquireFsm fsm(waiting_forever());
  fsm.start();
  auto pause = fsm.attempt_failed(t0 + 1s, AttemptError::retry_uncertain);
  EXPECT_EQ(pause.kind, Kind::pause);
  EXPECT_EQ(pause.bound, 1500ms);
  // The attempt may have taken the lock: the next step asks, it does not attempt blindly
  // (an attempt would count a re-entry, a second hold where the caller asked for one).
  EXPECT_EQ(fsm.timer_fired(t0 + 2500ms).kind, Kind::recheck);
  EXPECT_EQ(fsm.attempt_answered(t0 + 2600ms, kAcquired, false, false).kind, Kind::succeed);
}

TEST(AcquireFsm, AnErrorBeforeSendingIsRetriedAsAnAttempt) {
  AcquireFsm fsm(waiting_forever());
  fsm.start();
  EXPECT_EQ(fsm.attempt_failed(t0, AttemptError::retry).kind, Kind::pause);
  EXPECT_EQ(fsm.timer_fired(t0 + 1500ms).kind, Kind::attempt);
}

TEST(AcquireFsm, RetriesAreBoundedAndThenTheErrorIsReported) {
  auto s = waiting_forever();
  s.can_settle = false;
  AcquireFsm fsm(s);
  fsm.start();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(fsm.attempt_failed(t0, AttemptError::retry).kind, Kind::pause) << i;
    ASSERT_EQ(fsm.timer_fired(t0).kind, Kind::attempt) << i;
  }
  auto end = fsm.attempt_failed(t0, AttemptError::retry);
  EXPECT_EQ(end.kind, Kind::fail);
  EXPECT_EQ(end.error, Error::attempt);
}

TEST(AcquireFsm, AFatalErrorIsReportedAtOnce) {
  AcquireFsm fsm(waiting_forever());
  fsm.start();
  auto end = fsm.attempt_failed(t0, AttemptError::fatal);
  EXPECT_EQ(end.kind, Kind::fail);
  EXPECT_EQ(end.error, Error::attempt);
}

TEST(AcquireFsm, AnUncertainAttemptAtTheDeadlineIsSettledBeforeSayingNo) {
  AcquireFsm fsm(waiting_for(50ms));
  fsm.start();
  // The reply timed out after the caller's deadline: ask before answering.
  EXPECT_EQ(fsm.attempt_failed(t0 + 1s, AttemptError::retry_uncertain).kind, Kind::settle);
  EXPECT_EQ(fsm.settle_answered(t0 + 1001ms, true).kind, Kind::succeed);

  AcquireFsm no(waiting_for(50ms));
  no.start();
  no.attempt_failed(t0 + 1s, AttemptError::retry_uncertain);
  auto end = no.settle_answered(t0 + 1001ms, false);
  EXPECT_EQ(end.kind, Kind::fail);
  EXPECT_EQ(end.error, Error::none);
}

TEST(AcquireFsm, ASettleThatCannotTellRetriesThenSaysItDoesNotKnow) {
  AcquireFsm fsm(waiting_for(50ms));
  fsm.start();
  ASSERT_EQ(fsm.attempt_failed(t0 + 1s, AttemptError::retry_uncertain).kind, Kind::settle);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(fsm.settle_answered(t0 + 1s, std::nullopt).kind, Kind::pause) << i;
    ASSERT_EQ(fsm.timer_fired(t0 + 2s).kind, Kind::settle) << i;
  }
  auto end = fsm.settle_answered(t0 + 3s, std::nullopt);
  EXPECT_EQ(end.kind, Kind::fail);
  EXPECT_EQ(end.error, Error::unknown);  // never a plain "no" while a hold may exist
}

TEST(AcquireFsm, RetriesSpentAfterAnUncertainAttemptSettleWithTheAttemptsError) {
  auto s = waiting_forever();
  s.retry_attempts = 0;
  AcquireFsm fsm(s);
  fsm.start();
  EXPECT_EQ(fsm.attempt_failed(t0, AttemptError::retry_uncertain).kind, Kind::settle);
  auto end = fsm.settle_answered(t0, false);
  EXPECT_EQ(end.kind, Kind::fail);
  EXPECT_EQ(end.error, Error::attempt);
}

TEST(AcquireFsm, ASubscriptionFailureLeadsToPolling) {
  AcquireFsm fsm(waiting_forever());
  fsm.start();
  fsm.attempt_answered(t0, kHeld, false, false);
  // No SUBSCRIBE right, or no confirmation in time: no message can wake us, so poll.
  EXPECT_EQ(fsm.subscription_done(t0 + 1ms, false).kind, Kind::attempt);
  EXPECT_TRUE(fsm.polling());
  for (int i = 0; i < 3; ++i) {
    auto pause = fsm.attempt_answered(t0 + 2ms, kHeld, false, false);
    ASSERT_EQ(pause.kind, Kind::pause) << i;  // never a sleep waiting for a message
    EXPECT_EQ(pause.bound, 100ms);
    ASSERT_EQ(fsm.timer_fired(t0 + 102ms).kind, Kind::attempt) << i;
  }
  EXPECT_EQ(fsm.attempt_answered(t0 + 110ms, kAcquired, false, false).kind, Kind::succeed);
}

TEST(AcquireFsm, PollingIsBoundedByTheTtlAndTheDeadline) {
  AcquireFsm fsm(waiting_for(250ms));
  fsm.start();
  fsm.attempt_answered(t0, kHeld, false, false);
  fsm.subscription_done(t0, false);
  EXPECT_EQ(fsm.attempt_answered(t0, {false, 40}, false, false).bound, 40ms);
  fsm.timer_fired(t0 + 40ms);
  EXPECT_EQ(fsm.attempt_answered(t0 + 200ms, kHeld, false, false).bound, 50ms);
  fsm.timer_fired(t0 + 250ms);
  EXPECT_EQ(fsm.attempt_answered(t0 + 250ms, kHeld, false, false).kind, Kind::fail);
}

TEST(AcquireFsm, ASubscriptionFailureAfterTheDeadlineIsAPlainNo) {
  AcquireFsm fsm(waiting_for(100ms));
  fsm.start();
  EXPECT_EQ(fsm.attempt_answered(t0, kHeld, false, false).bound, 100ms);
  auto end = fsm.subscription_done(t0 + 100ms, false);
  EXPECT_EQ(end.kind, Kind::fail);
  EXPECT_EQ(end.error, Error::none);
}

TEST(AcquireFsm, EventsAfterTheEndChangeNothing) {
  AcquireFsm fsm(waiting_forever());
  fsm.start();
  fsm.attempt_answered(t0, kAcquired, false, false);
  EXPECT_EQ(fsm.woken(t0).kind, Kind::none);
  EXPECT_EQ(fsm.timer_fired(t0).kind, Kind::none);
  EXPECT_EQ(fsm.attempt_answered(t0, kAcquired, true, false).kind, Kind::none);
  EXPECT_EQ(fsm.subscription_done(t0, true).kind, Kind::none);
}

// --- Cancellation (AcquireFsm::cancel; an async wait whose handler's slot was emitted) ---

TEST(AcquireFsm, ACancelledSleeperGivesUpAtOnceReportingCancelled) {
  auto fsm = asleep();
  auto end = fsm.cancel(t0 + 5s);
  EXPECT_EQ(end.kind, Kind::fail);
  EXPECT_EQ(end.error, Error::cancelled);
  EXPECT_TRUE(fsm.done());
  EXPECT_EQ(fsm.woken(t0 + 6s).kind, Kind::none);  // a release message after it: nothing
  EXPECT_EQ(fsm.cancel(t0 + 7s).kind, Kind::none);  // a second cancellation: nothing
}

TEST(AcquireFsm, ACancelledWaitWhoseAttemptIsInFlightIsDecidedByItsAnswer) {
  // An attempt on its way may take the lock: it decides, the cancellation does not undo it.
  AcquireFsm acquired(waiting_forever());
  acquired.start();
  EXPECT_EQ(acquired.cancel(t0).kind, Kind::none);
  EXPECT_EQ(acquired.attempt_answered(t0 + 1ms, kAcquired, true, false).kind, Kind::succeed);

  AcquireFsm refused(waiting_forever());
  refused.start();
  EXPECT_EQ(refused.cancel(t0).kind, Kind::none);
  // Not acquired: over, whatever the answer would otherwise lead to (subscribe, a pending
  // release message's retry).
  auto end = refused.attempt_answered(t0 + 1ms, kHeld, true, /*wakeup_pending=*/true);
  EXPECT_EQ(end.kind, Kind::fail);
  EXPECT_EQ(end.error, Error::cancelled);
}

TEST(AcquireFsm, ACancelledWaitWhoseLastAttemptMayHaveRunSettlesFirst) {
  // The attempt's reply was lost and the loop pauses before asking again: a cancellation
  // must still find out whether that attempt took the lock (never "no" while holding it).
  AcquireFsm fsm(waiting_forever());
  fsm.start();
  ASSERT_EQ(fsm.attempt_failed(t0, AttemptError::retry_uncertain).kind, Kind::pause);
  EXPECT_EQ(fsm.cancel(t0 + 100ms).kind, Kind::settle);
  EXPECT_EQ(fsm.settle_answered(t0 + 200ms, true).kind, Kind::succeed);

  AcquireFsm no(waiting_forever());
  no.start();
  no.attempt_failed(t0, AttemptError::retry_uncertain);
  ASSERT_EQ(no.cancel(t0 + 100ms).kind, Kind::settle);
  auto end = no.settle_answered(t0 + 200ms, false);
  EXPECT_EQ(end.kind, Kind::fail);
  EXPECT_EQ(end.error, Error::cancelled);
}

TEST(AcquireFsm, ACancelledWaitThatIsSubscribingOrPollingGivesUp) {
  AcquireFsm subscribing(waiting_forever());
  subscribing.start();
  ASSERT_EQ(subscribing.attempt_answered(t0, kHeld, false, false).kind, Kind::subscribe);
  auto end = subscribing.cancel(t0 + 1ms);
  EXPECT_EQ(end.kind, Kind::fail);
  EXPECT_EQ(end.error, Error::cancelled);
  EXPECT_EQ(subscribing.subscription_done(t0 + 2ms, true).kind, Kind::none);

  AcquireFsm polling(waiting_forever());
  polling.start();
  polling.attempt_answered(t0, kHeld, false, false);
  ASSERT_EQ(polling.subscription_done(t0, false).kind, Kind::attempt);
  ASSERT_EQ(polling.attempt_answered(t0, kHeld, false, false).kind, Kind::pause);
  EXPECT_EQ(polling.cancel(t0 + 10ms).error, Error::cancelled);
}

TEST(AcquireFsm, ACancellationBeforeTheStartOrAfterTheEndChangesNothing) {
  AcquireFsm idle(waiting_forever());
  EXPECT_EQ(idle.cancel(t0).kind, Kind::none);
  EXPECT_EQ(idle.start().kind, Kind::attempt);  // the loop attaches after its start anyway
  AcquireFsm done(waiting_forever());
  done.start();
  ASSERT_EQ(done.attempt_answered(t0, kAcquired, false, false).kind, Kind::succeed);
  EXPECT_EQ(done.cancel(t0).kind, Kind::none);
}

// SpinLock's wait is the polling mode from the first attempt (it was a loop of its own): it
// never subscribes, sleeps its backoff between attempts (not the holder's TTL), stops at its
// deadline, and has the same error handling and cancellation as every kind.
AcquireFsm::Settings spinning(std::optional<Duration> wait = std::nullopt) {
  auto s = waiting_forever();
  if (wait) s.deadline = t0 + *wait;
  s.spin = std::make_shared<redisync::sync::BackoffSequence>(
      redisync::SpinBackoff::exponential(10ms, 40ms, 2), 1);
  return s;
}

TEST(AcquireFsm, ASpinAcquisitionPollsWithItsBackoffAndNeverSubscribes) {
  AcquireFsm fsm(spinning());
  EXPECT_TRUE(fsm.polling());
  ASSERT_EQ(fsm.start().kind, Kind::attempt);
  // Backoff 10 ms, then 20 + jitter, then the 40 ms cap; the holder's 30 s TTL is not used.
  auto a = fsm.attempt_answered(t0, kHeld, false, false);
  EXPECT_EQ(a.kind, Kind::pause);
  EXPECT_EQ(a.bound, 10ms);
  ASSERT_EQ(fsm.timer_fired(t0 + 10ms).kind, Kind::attempt);
  a = fsm.attempt_answered(t0 + 11ms, kHeld, false, false);
  EXPECT_EQ(a.kind, Kind::pause);
  EXPECT_GE(a.bound, 20ms);
  EXPECT_LE(a.bound, 21ms);
  ASSERT_EQ(fsm.timer_fired(t0 + 40ms).kind, Kind::attempt);
  a = fsm.attempt_answered(t0 + 41ms, kHeld, false, false);
  EXPECT_EQ(a.bound, 40ms);
  ASSERT_EQ(fsm.timer_fired(t0 + 81ms).kind, Kind::attempt);
  EXPECT_EQ(fsm.attempt_answered(t0 + 82ms, kAcquired, false, false).kind, Kind::succeed);
}

TEST(AcquireFsm, ASpinAcquisitionStopsAtItsDeadline) {
  AcquireFsm fsm(spinning(25ms));
  fsm.start();
  EXPECT_EQ(fsm.attempt_answered(t0, kHeld, false, false).bound, 10ms);
  fsm.timer_fired(t0 + 10ms);
  // 20 ms and more left of the backoff, 15 ms of the wait: the sleep is the wait's rest.
  EXPECT_EQ(fsm.attempt_answered(t0 + 10ms, kHeld, false, false).bound, 15ms);
  fsm.timer_fired(t0 + 25ms);
  const auto end = fsm.attempt_answered(t0 + 26ms, kHeld, false, false);
  EXPECT_EQ(end.kind, Kind::fail);
  EXPECT_EQ(end.error, Error::none);
}

TEST(AcquireFsm, ASpinAcquisitionRetriesAndRechecksAnUncertainAttempt) {
  // The spin loop once reported a timed-out attempt's error after a settle step: now, as
  // every kind, it rechecks (did it run?) and goes on waiting within the retry budget.
  AcquireFsm fsm(spinning());
  fsm.start();
  const auto pause = fsm.attempt_failed(t0, AttemptError::retry_uncertain);
  EXPECT_EQ(pause.kind, Kind::pause);
  EXPECT_EQ(pause.bound, 1500ms);
  EXPECT_EQ(fsm.timer_fired(t0 + 1500ms).kind, Kind::recheck);
  EXPECT_EQ(fsm.attempt_answered(t0 + 1501ms, kHeld, false, false).kind, Kind::pause);
  auto cancelled = fsm.cancel(t0 + 1502ms);
  EXPECT_EQ(cancelled.kind, Kind::fail);
  EXPECT_EQ(cancelled.error, Error::cancelled);
}
