// SPDX-License-Identifier: Apache-2.0
// The chaos checker (tests/chaos/history.h) on hand-written histories: it must catch what it
// exists to catch (overlaps, lost updates, token regressions, idle workers, hangs) and accept
// the losses the safety model predicts when the holder was told.
#include "chaos/history.h"

#include <gtest/gtest.h>

namespace redisync::chaos {
namespace {

constexpr long long kMs = 1000000;

Expectations two_workers(long long counter) {
  Expectations e;
  e.workers = 2;
  e.counter = counter;
  e.wait_ns = 1000 * kMs;
  e.hang_slack_ns = 500 * kMs;
  return e;
}

TEST(ChaosHistory, CleanHandoffPasses) {
  const History h = parse_history(
      "A 0 100 0 0 1000000 1 f0\n"
      "R 0 0 3000000 4000000 0 1 ok\n"
      "A 1 101 0 500000 5000000 2 f1\n"
      "R 1 0 7000000 8000000 1 1 ok\n");
  Expectations e = two_workers(2);
  e.tokens = true;
  const Verdict v = check(h, e);
  EXPECT_TRUE(v.ok()) << v.summary("x");
  EXPECT_EQ(v.sections, 2);
  EXPECT_EQ(v.writes, 2);
  EXPECT_EQ(v.overlaps, 0);
  EXPECT_EQ(v.lost_updates, 0);
  EXPECT_DOUBLE_EQ(v.max_blocked_after_free_ms, 1.0);  // acquired 5 ms, previous freed at 4 ms
}

TEST(ChaosHistory, UnreportedOverlapFails) {
  const History h = parse_history(
      "A 0 100 0 0 1000000 0 f0\n"
      "A 1 101 0 0 2000000 0 f1\n"
      "R 0 0 3000000 4000000 0 1 ok\n"
      "R 1 0 5000000 6000000 0 1 ok\n");
  const Verdict v = check(h, two_workers(1));
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.overlaps, 1);
  EXPECT_EQ(v.unexplained_overlaps, 1);
  EXPECT_EQ(v.lost_updates, 1);
}

TEST(ChaosHistory, ReportedLossExplainsOverlapAndLostUpdate) {
  // Worker 0 was paused past its lease; worker 1 took the lock; 0's stale write lost 1's.
  const History h = parse_history(
      "A 0 100 0 0 1000000 0 f0\n"
      "A 1 101 0 0 2000000 0 f1\n"
      "R 1 0 3000000 4000000 0 1 ok\n"
      "L 0 4500000 lockname\n"
      "R 0 0 5000000 6000000 0 1 lost\n"
      "A 1 101 1 6000000 7000000 0 f1\n"
      "R 1 1 8000000 9000000 1 1 ok\n"
      "A 0 100 1 6000000 10000000 0 f0\n"
      "R 0 1 11000000 12000000 2 1 ok\n");
  Expectations e = two_workers(3);
  e.paused[0] = {{1500000, 4400000}};  // the test had worker 0 stopped when 1 acquired
  e.faults = 1;
  const Verdict v = check(h, e);
  EXPECT_TRUE(v.ok()) << v.summary("x");
  EXPECT_EQ(v.overlaps, 1);
  EXPECT_EQ(v.unexplained_overlaps, 0);
  EXPECT_EQ(v.explained_by_pause, 1);
  EXPECT_EQ(v.lost_updates, 1);
  EXPECT_EQ(v.lost_reported, 1);
  EXPECT_EQ(v.lost_callbacks, 1);
}

// Worker 0 was continued at 4.4 ms; worker 1 acquired at 4.5 ms, 0 was told at 4.6 ms: as
// early as a resumed process can be told. Told 300 ms after the SIGCONT instead, it was late.
TEST(ChaosHistory, NoticeRightAfterResumeExplainsAnOverlapButNotALateOne) {
  auto history = [](long long told) {
    const std::string t = std::to_string(told);
    return parse_history(
        "A 0 100 0 0 1000000 0 f0\n"
        "A 1 101 0 0 4500000 0 f1\n"
        "R 1 0 5000000 5100000 0 1 ok\n"
        "L 0 " + t + " lockname\n"
        "R 0 0 " + std::to_string(told + 100000) + " " + std::to_string(told + 200000) +
        " 0 s lost\n");
  };
  Expectations e = two_workers(1);
  e.paused[0] = {{1500000, 4400000}};
  e.faults = 1;
  const Verdict prompt = check(history(4600000), e);
  EXPECT_TRUE(prompt.ok()) << prompt.summary("prompt");
  EXPECT_EQ(prompt.explained_by_pause, 1);
  const Verdict late = check(history(304400000), e);
  EXPECT_FALSE(late.ok());
  EXPECT_EQ(late.unexplained_overlaps, 1);
}

// The same history with nobody stopped: worker 0 was told 2.5 ms after worker 1 acquired. A
// notice that late does not explain the overlap (no data-loss fault either).
const char* kToldLate =
    "A 0 100 0 0 1000000 0 f0\n"
    "A 1 101 0 0 2000000 0 f1\n"
    "R 1 0 3000000 4000000 0 1 ok\n"
    "L 0 4500000 lockname\n"
    "R 0 0 5000000 6000000 0 s lost\n";

TEST(ChaosHistory, NoticeAfterTheNextAcquireDoesNotExplainTheOverlap) {
  const Verdict v = check(parse_history(kToldLate), two_workers(1));
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.unexplained_overlaps, 1);
  EXPECT_DOUBLE_EQ(v.max_notice_late_ms, 2.5);
  ASSERT_FALSE(v.problems.empty());
  EXPECT_NE(v.problems[0].find("told 2.5"), std::string::npos) << v.problems[0];
}

TEST(ChaosHistory, LateNoticeIsReportedLateOnlyWithADataLossFault) {
  Expectations e = two_workers(1);
  e.workers = 0;  // worker 0 completed no ok section; progress is not the point here
  e.faults = 1;
  e.data_loss_faults = 1;
  const Verdict v = check(parse_history(kToldLate), e);
  EXPECT_TRUE(v.ok()) << v.summary("x") << v.problems.size();
  EXPECT_EQ(v.reported_late, 1);
  EXPECT_EQ(v.stale_holds, 1);
}

// The mirror image: the later acquire's hold was the one lost (evicted before its reply was
// read, so the other worker's acquire ran second at the server but returned first), and only
// that later holder is told. With a data-loss fault that is a late report; without, it fails.
constexpr const char* kLaterHoldLost =
    "A 0 100 0 0 1000000 0 f0\n"
    "A 1 101 0 0 2000000 0 f1\n"
    "R 0 0 3000000 4000000 0 1 ok\n"
    "L 1 4500000 lockname\n"
    "R 1 0 5000000 6000000 0 s lost\n";

TEST(ChaosHistory, LaterHoldLostIsReportedLateOnlyWithADataLossFault) {
  Expectations e = two_workers(1);
  e.workers = 0;  // worker 1 completed no ok section; progress is not the point here
  const Verdict strict = check(parse_history(kLaterHoldLost), e);
  EXPECT_FALSE(strict.ok());
  EXPECT_EQ(strict.unexplained_overlaps, 1);
  e.faults = 1;
  e.data_loss_faults = 1;
  const Verdict v = check(parse_history(kLaterHoldLost), e);
  EXPECT_TRUE(v.ok()) << v.summary("x") << v.problems.size();
  EXPECT_EQ(v.reported_late, 1);
}

TEST(ChaosHistory, OverlapWhereNeitherHolderIsToldFailsEvenWithADataLossFault) {
  Expectations e = two_workers(1);
  e.faults = 1;
  e.data_loss_faults = 1;
  const Verdict v = check(parse_history("A 0 100 0 0 1000000 0 f0\n"
                                        "A 1 101 0 0 2000000 0 f1\n"
                                        "R 0 0 3000000 4000000 0 1 ok\n"
                                        "R 1 0 5000000 6000000 0 1 ok\n"),
                          e);
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.unexplained_overlaps, 1);
}

TEST(ChaosHistory, NoticeBeforeTheNextAcquireExplainsTheOverlap) {
  // Worker 0 is told at 1.5 ms, skips its write; worker 1 acquires at 2 ms.
  const History h = parse_history(
      "A 0 100 0 0 1000000 0 f0\n"
      "L 0 1500000 lockname\n"
      "A 1 101 0 0 2000000 0 f1\n"
      "R 1 0 3000000 4000000 0 1 ok\n"
      "F 0 0 4500000 TimeoutError\n"
      "R 0 0 5000000 6000000 0 s lost\n");
  Expectations e = two_workers(1);
  e.workers = 0;
  e.faults = 1;
  const Verdict v = check(h, e);
  EXPECT_TRUE(v.ok()) << v.summary("x");
  EXPECT_EQ(v.explained_in_time, 1);
  EXPECT_DOUBLE_EQ(v.min_notice_lead_ms, 0.5);
  EXPECT_EQ(v.release_failures, 1);
  EXPECT_EQ(v.lost_updates, 0);
  // The explained overlaps are bounded by the faults injected: none injected, none excused.
  e.faults = 0;
  const Verdict unbounded = check(h, e);
  EXPECT_FALSE(unbounded.ok());
  EXPECT_EQ(unbounded.stale_holds, 1);
}

TEST(ChaosHistory, ReadNotFollowingThePreviousWriteFails) {
  // No overlap in time, yet worker 1 read 5 after worker 0 wrote 1: someone else wrote.
  const History h = parse_history(
      "A 0 100 0 0 1000000 0 f0\n"
      "R 0 0 2000000 3000000 0 1 ok\n"
      "A 1 101 0 0 4000000 0 f1\n"
      "R 1 0 5000000 6000000 5 1 ok\n");
  const Verdict v = check(h, two_workers(6));
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.unexplained_breaks, 1);
}

TEST(ChaosHistory, TokenRegressionFails) {
  const History h = parse_history(
      "A 0 100 0 0 1000000 5 f0\n"
      "R 0 0 2000000 3000000 0 1 ok\n"
      "A 1 101 0 0 4000000 5 f1\n"
      "R 1 0 5000000 6000000 1 1 ok\n");
  Expectations e = two_workers(2);
  e.tokens = true;
  const Verdict v = check(h, e);
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.token_regressions, 1);
}

TEST(ChaosHistory, KilledHolderMayOrMayNotHaveWritten) {
  const History h = parse_history(
      "A 0 100 0 0 1000000 0 f0\n"
      "R 0 0 2000000 3000000 0 1 ok\n"
      "A 1 101 0 0 4000000 0 f1\n"  // killed at 5 ms, inside its section
      "A 0 100 1 3500000 1505000000 0 f0\n"
      "R 0 1 1506000000 1507000000 2 1 ok\n");
  Expectations e = two_workers(3);
  e.workers = 1;  // worker 1 completed nothing before its kill; only worker 0 must progress
  e.wait_ns = 2000 * kMs;
  e.killed[1] = 5 * kMs;
  for (const long long counter : {2LL, 3LL}) {
    e.counter = counter;
    const Verdict v = check(h, e);
    EXPECT_TRUE(v.ok()) << v.summary("x");
    EXPECT_EQ(v.killed_open, 1);
    EXPECT_DOUBLE_EQ(v.max_recovery_ms, 1500.0);
  }
  e.counter = 4;  // more than every write plus the killed one: impossible
  EXPECT_FALSE(check(h, e).ok());
}

TEST(ChaosHistory, TwoHoldersKilledInARowMayBothHaveWritten) {
  // Worker 1 and then worker 2 are killed in their sections, each perhaps after writing:
  // worker 0 may read up to two more than it wrote, not three.
  const auto history = [](int read) {
    return parse_history(
        "A 0 100 0 0 1000000 0 f0\n"
        "R 0 0 2000000 3000000 0 1 ok\n"
        "A 1 101 0 0 4000000 0 f1\n"
        "A 2 102 0 3800000 1504000000 0 f2\n"
        "A 0 100 1 3500000 3004000000 0 f0\n"
        "R 0 1 3005000000 3006000000 " +
        std::to_string(read) + " 1 ok\n");
  };
  Expectations e = two_workers(3);
  e.workers = 1;
  e.wait_ns = 4000 * kMs;
  e.killed[1] = 5 * kMs;
  e.killed[2] = 1505 * kMs;
  e.counter = 3;
  const Verdict both = check(history(3), e);
  EXPECT_TRUE(both.ok()) << both.summary("x");
  EXPECT_EQ(both.killed_open, 2);
  e.counter = 4;
  EXPECT_FALSE(check(history(4), e).ok());
}

TEST(ChaosHistory, OpenSectionOfALiveWorkerFails) {
  const History h = parse_history("A 0 100 0 0 1000000 0 f0\n");
  Expectations e = two_workers(0);
  e.workers = 0;
  EXPECT_FALSE(check(h, e).ok());
}

TEST(ChaosHistory, IdleWorkerAndHungAttemptFail) {
  const History h = parse_history(
      "A 0 100 0 0 1000000 0 f0\n"
      "R 0 0 2000000 3000000 0 1 ok\n"
      "T 1 0 0 3000000000\n"  // waited 3 s with a 1 s wait and 0.5 s slack
      "E 1 1 3000000000 3001000000 TimeoutError\n");
  const Verdict v = check(h, two_workers(1));
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.idle_workers, std::vector<int>{1});
  EXPECT_EQ(v.hung_attempts, 1);
  EXPECT_EQ(v.timeouts, 1);
  EXPECT_EQ(v.errors.at("acquire:TimeoutError"), 1);
}

TEST(ChaosHistory, AHoldEndedByALostNoticeIsProgress) {
  // Worker 1's only hold ended "lost": it was not starved (the notice's timing is checked
  // separately), so it is not idle.
  const History h = parse_history(
      "A 0 100 0 0 1000000 0 f0\n"
      "R 0 0 2000000 3000000 0 1 ok\n"
      "A 1 101 0 4000000 5000000 0 f0\n"
      "R 1 0 6000000 7000000 0 0 lost\n");
  const Verdict v = check(h, two_workers(1));
  EXPECT_TRUE(v.idle_workers.empty());
}

TEST(ChaosHistory, AWorkerKilledInsideItsOnlySectionIsNotIdle) {
  const History h = parse_history(
      "A 0 100 0 0 1000000 0 f0\n"
      "R 0 0 2000000 3000000 0 1 ok\n"
      "A 1 101 0 4000000 5000000 0 f1\n");
  Expectations e = two_workers(1);
  e.killed[1] = 6000000;
  const Verdict v = check(h, e);
  EXPECT_TRUE(v.idle_workers.empty());
  EXPECT_EQ(v.killed_open, 1);
}

TEST(ChaosHistory, MalformedLinesAreReported) {
  const History h = parse_history("A 0 garbage\nR 9 9 1 2 3 1 ok\nZ\n");
  EXPECT_EQ(h.malformed.size(), 3u);
  EXPECT_FALSE(check(h, Expectations{}).ok());
}

}  // namespace
}  // namespace redisync::chaos
