// SPDX-License-Identifier: Apache-2.0
// What `redisync run` tells its watcher (tools/redisync/run/watch_deadline.h), without processes.
#include <gtest/gtest.h>

#include "watch_deadline.h"

using namespace std::chrono_literals;
using redisync::cli::deadline_check_period;
using redisync::cli::watcher_deadline;
using redisync::cli::WatchClock;

namespace {
const WatchClock::time_point t0 = WatchClock::time_point{} + 1000s;
}

// Issue 36: the watcher got the hold's deadline plus a twentieth of run's own lease; for a
// hold granted on a short grant lease that lay past the server's expiry.
TEST(WatchDeadlineTest, TheWatcherGetsTheHoldsDeadlineAndNothingLater) {
  EXPECT_EQ(watcher_deadline(t0 + 1800ms), t0 + 1800ms);
  EXPECT_FALSE(watcher_deadline(std::nullopt));
}

TEST(WatchDeadlineTest, ChecksATenthOfTheLeaseApartAtMostOneSecond) {
  EXPECT_EQ(deadline_check_period(30s, std::nullopt, t0), 1000ms);
  EXPECT_EQ(deadline_check_period(2s, std::nullopt, t0), 200ms);
  EXPECT_EQ(deadline_check_period(5ms, std::nullopt, t0), 1ms);
  EXPECT_EQ(deadline_check_period(30s, t0 + 27s, t0), 1000ms);
}

// A granted hold's deadline is the releaser's grant lease (500 ms) while run's lease is 30 s:
// run looks again before that deadline passes, three times, so the deadline its extension
// moves reaches the watcher in time.
TEST(WatchDeadlineTest, ChecksThreeTimesBeforeASoonerDeadline) {
  EXPECT_EQ(deadline_check_period(30s, t0 + 450ms, t0), 150ms);
  EXPECT_EQ(deadline_check_period(30s, t0 + 2ms, t0), 1ms);
  EXPECT_EQ(deadline_check_period(30s, t0 - 5ms, t0), 1ms);  // passed: the notice is due
}
