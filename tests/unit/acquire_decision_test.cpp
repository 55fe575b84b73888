// SPDX-License-Identifier: Apache-2.0
// The acquire loop's decisions (wait docs/wire-format.md §13) with a fake clock: no Redis needed.
#include <gtest/gtest.h>

#include "sync/acquire/acquire_loop.h"

using namespace std::chrono_literals;
using redisync::Duration;
using redisync::sync::AttemptResult;
using redisync::sync::Clock;
using redisync::sync::decide_next_step;
using redisync::sync::NextStep;

namespace {
const Clock::time_point kNow = Clock::time_point{} + 1000s;
}

TEST(AcquireDecision, GivesUpAtTheDeadline) {
  EXPECT_EQ(decide_next_step({false, 500}, kNow, kNow, true, false).kind, NextStep::give_up);
  EXPECT_EQ(decide_next_step({false, 500}, kNow, kNow - 1ms, false, false).kind,
            NextStep::give_up);
}

TEST(AcquireDecision, SubscribesBeforeSleeping) {
  EXPECT_EQ(decide_next_step({false, 500}, kNow, std::nullopt, false, false).kind,
            NextStep::subscribe);
}

TEST(AcquireDecision, RetriesAtOnceWhenAWakeupArrivedDuringTheAttempt) {
  EXPECT_EQ(decide_next_step({false, 500}, kNow, std::nullopt, true, true).kind,
            NextStep::retry_now);
}

TEST(AcquireDecision, SleepsForTheHoldersLease) {
  auto s = decide_next_step({false, 500}, kNow, std::nullopt, true, false);
  EXPECT_EQ(s.kind, NextStep::sleep);
  EXPECT_EQ(s.sleep_for, 500ms);
}

TEST(AcquireDecision, SleepIsBoundedByTheDeadline) {
  auto s = decide_next_step({false, 30000}, kNow, kNow + 200ms, true, false);
  EXPECT_EQ(s.kind, NextStep::sleep);
  EXPECT_EQ(s.sleep_for, 200ms);
}

TEST(AcquireDecision, LockWithoutExpiryWaitsForAMessageOnly) {
  auto s = decide_next_step({false, -1}, kNow, std::nullopt, true, false);
  EXPECT_EQ(s.kind, NextStep::sleep);
  EXPECT_EQ(s.sleep_for, Duration::max());
  auto bounded = decide_next_step({false, -1}, kNow, kNow + 2s, true, false);
  EXPECT_EQ(bounded.sleep_for, 2000ms);
}

TEST(AcquireDecision, ZeroTtlRetriesWithoutSleeping) {
  auto s = decide_next_step({false, 0}, kNow, std::nullopt, true, false);
  EXPECT_EQ(s.kind, NextStep::sleep);
  EXPECT_EQ(s.sleep_for, 0ms);
}
