// SPDX-License-Identifier: Apache-2.0
// The chaos checkers for the other kinds on hand-written histories: readers of a read-write
// lock (shared holds), semaphores (N permits) and CountDownLatch. Each must fail on the
// violation it exists to catch and pass the legal history next to it.
#include <gtest/gtest.h>

#include "chaos/history.h"
#include "chaos/latch_history.h"

namespace redisync::chaos {
namespace {

Expectations workers(int n) {
  Expectations e;
  e.workers = n;
  e.wait_ns = 1000000000;
  e.hang_slack_ns = 500000000;
  return e;
}

// Workers 1 and 3 read (no write: 'n'), worker 0 writes. Times in ms (x 1e6 ns).
constexpr const char* kReadersOverlap =
    "A 1 101 0 0 1000000 0 f1\n"
    "A 3 103 0 0 2000000 0 f3\n"
    "R 1 0 3000000 3100000 0 n ok\n"
    "R 3 0 4000000 4100000 0 n ok\n"
    "A 0 100 0 0 5000000 0 f0\n"
    "R 0 0 6000000 6100000 0 1 ok\n";

TEST(ChaosHistoryReadWrite, ReadersMayOverlapEachOther) {
  Expectations e = workers(2);  // workers 0 and 1 must progress (3 too, but it is not asked)
  e.counter = 1;
  e.shared_workers = {1, 3};
  const Verdict v = check(parse_history(kReadersOverlap), e);
  EXPECT_TRUE(v.ok()) << v.summary("x");
  EXPECT_EQ(v.overlaps, 0);
  EXPECT_EQ(v.max_holds_at_once, 2);
  // The same history with the two readers taken as writers overlaps.
  e.shared_workers = {};
  EXPECT_FALSE(check(parse_history(kReadersOverlap), e).ok());
}

TEST(ChaosHistoryReadWrite, AWriterOverlappingAReaderFails) {
  Expectations e = workers(2);
  e.counter = 1;
  e.shared_workers = {1};
  const Verdict v = check(parse_history("A 1 101 0 0 1000000 0 f1\n"
                                        "A 0 100 0 0 2000000 0 f0\n"  // a writer in: reader on
                                        "R 1 0 3000000 3100000 0 n ok\n"
                                        "R 0 0 4000000 4100000 0 1 ok\n"),
                          e);
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.overlaps, 1);
  EXPECT_EQ(v.unexplained_overlaps, 1);
}

TEST(ChaosHistoryReadWrite, AReaderOverlappingAWriterFails) {
  Expectations e = workers(2);
  e.counter = 1;
  e.shared_workers = {1};
  const Verdict v = check(parse_history("A 0 100 0 0 1000000 0 f0\n"
                                        "A 1 101 0 0 2000000 0 f1\n"  // a reader in: writer on
                                        "R 1 0 3000000 3100000 0 n ok\n"
                                        "R 0 0 4000000 4100000 0 1 ok\n"),
                          e);
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.unexplained_overlaps, 1);
}

// Three workers on a semaphore of 2 permits; nobody writes.
constexpr const char* kTwoAtOnce =
    "A 0 100 0 0 1000000 0 p0\n"
    "A 1 101 0 0 2000000 0 p1\n"
    "R 0 0 3000000 3100000 0 n ok\n"
    "A 2 102 0 0 3200000 0 p2\n"  // after 0 released: 2 on
    "R 1 0 4000000 4100000 0 n ok\n"
    "R 2 0 5000000 5100000 0 n ok\n";

TEST(ChaosHistoryPermits, TwoPermitsInUseOfTwoPass) {
  Expectations e = workers(3);
  e.permits = 2;
  const Verdict v = check(parse_history(kTwoAtOnce), e);
  EXPECT_TRUE(v.ok()) << v.summary("x");
  EXPECT_EQ(v.overlaps, 0);
  EXPECT_EQ(v.max_holds_at_once, 2);
}

TEST(ChaosHistoryPermits, AThirdHoldOfTwoPermitsFails) {
  Expectations e = workers(3);
  e.permits = 2;
  const Verdict v = check(parse_history("A 0 100 0 0 1000000 0 p0\n"
                                        "A 1 101 0 0 2000000 0 p1\n"
                                        "A 2 102 0 0 2500000 0 p2\n"  // 3 on, 2 permits
                                        "R 0 0 3000000 3100000 0 n ok\n"
                                        "R 1 0 4000000 4100000 0 n ok\n"
                                        "R 2 0 5000000 5100000 0 n ok\n"),
                          e);
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.overlaps, 1);
  EXPECT_EQ(v.unexplained_overlaps, 1);
  EXPECT_EQ(v.max_holds_at_once, 3);
}

// A leased permit: holder 0 knew its lease ended at 1.9 ms (its L line) before 2 acquired at
// 2.5 ms: the third hold is explained, as a lock holder told in time. Told at 2.6 ms instead,
// after the third acquired, it is not.
TEST(ChaosHistoryPermits, AnExpiredLeaseExplainsTheExcessOnlyIfToldBefore) {
  auto history = [](const std::string& told) {
    return parse_history(
        "A 0 100 0 0 1000000 0 p0\n"
        "A 1 101 0 0 2000000 0 p1\n"
        "L 0 " +
        told +
        " sem\n"
        "A 2 102 0 0 2500000 0 p2\n"
        "R 0 0 3000000 3100000 0 n lost\n"
        "R 1 0 4000000 4100000 0 n ok\n"
        "R 2 0 5000000 5100000 0 n ok\n");
  };
  Expectations e = workers(3);
  e.permits = 2;
  e.faults = 1;
  const Verdict in_time = check(history("1900000"), e);
  EXPECT_TRUE(in_time.ok()) << in_time.summary("x");
  EXPECT_EQ(in_time.explained_in_time, 1);
  const Verdict late = check(history("2600000"), e);
  EXPECT_FALSE(late.ok());
  EXPECT_EQ(late.unexplained_overlaps, 1);
}

// Worker 0 was killed after its U line (section over, releasing): its hold ended there, and
// worker 2's acquire afterwards is the second hold, not the third. Without the U line the
// hold lasts until the kill and the same history has three on at once.
TEST(ChaosHistoryPermits, AHolderKilledWhileReleasingLeftItsSectionAtItsULine) {
  auto history = [](bool released) {
    return parse_history(std::string("A 0 100 0 0 1000000 0 p0\n"
                                     "A 1 101 0 0 2000000 0 p1\n") +
                         (released ? "U 0 0 2400000\n" : "") +
                         "A 2 102 0 0 2500000 0 p2\n"
                         "R 1 0 4000000 4100000 0 n ok\n"
                         "R 2 0 5000000 5100000 0 n ok\n");
  };
  Expectations e = workers(3);
  e.permits = 2;
  e.killed[0] = 3000000;
  const Verdict released = check(history(true), e);
  EXPECT_TRUE(released.ok()) << released.summary("x");
  EXPECT_EQ(released.killed_open, 1);
  EXPECT_FALSE(check(history(false), e).ok());
}

LatchExpectations latch(long long count) {
  LatchExpectations e;
  e.count = count;
  e.awaiters = {0, 1};
  e.wait_ns = 1000000000;
  e.hang_slack_ns = 500000000;
  return e;
}

TEST(ChaosHistoryLatch, ReleaseAfterTheLastCountDownPasses) {
  const LatchVerdict v = check_latch(parse_latch_history("W 0 0 0 1000000000 0\n"
                                                         "D 2 0 1100000000\n"
                                                         "C 2 0 1110000000\n"
                                                         "D 3 0 1200000000\n"
                                                         "C 3 0 1210000000\n"
                                                         "W 0 1 1000000000 1220000000 1\n"
                                                         "W 1 0 1000000000 1230000000 1\n"),
                                     latch(2));
  EXPECT_TRUE(v.ok()) << v.summary("x");
  EXPECT_EQ(v.released, 2);
  EXPECT_NEAR(v.max_release_lag_ms, 20.0, 1e-6);
}

TEST(ChaosHistoryLatch, ReleaseBeforeTheLastCountDownFails) {
  const LatchVerdict v = check_latch(parse_latch_history("D 2 0 1100000000\n"
                                                         "C 2 0 1110000000\n"
                                                         "W 0 0 1000000000 1150000000 1\n"
                                                         "D 3 0 1200000000\n"
                                                         "C 3 0 1210000000\n"
                                                         "W 1 0 1000000000 1230000000 1\n"),
                                     latch(2));
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.early_releases, 1);
}

TEST(ChaosHistoryLatch, TimeoutOnAnOpenLatchAndANeverReleasedAwaiterFail) {
  const LatchVerdict v = check_latch(parse_latch_history("D 2 0 1100000000\n"
                                                         "C 2 0 1110000000\n"
                                                         "W 0 0 1200000000 2200000000 0\n"
                                                         "W 1 0 1000000000 1130000000 1\n"),
                                     latch(1));
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.missed_openings, 1);
  EXPECT_EQ(v.never_released, std::vector<int>{0});
}

TEST(ChaosHistoryLatch, AHungWaitFails) {
  const LatchVerdict v = check_latch(parse_latch_history("W 0 0 0 1600000000 0\n"
                                                         "D 2 0 1700000000\n"
                                                         "C 2 0 1710000000\n"
                                                         "W 0 1 1600000000 1720000000 1\n"
                                                         "W 1 0 1000000000 1730000000 1\n"),
                                     latch(1));
  EXPECT_FALSE(v.ok());
  EXPECT_EQ(v.hung_waits, 1);
}

}  // namespace
}  // namespace redisync::chaos
