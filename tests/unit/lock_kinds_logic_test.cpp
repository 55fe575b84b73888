// SPDX-License-Identifier: Apache-2.0
// Pure decisions of the lock kinds: the spin lock's backoff sequence (§10), the fair lock's
// re-poll bound (§4.8), the read-lock renewal batches (§5.7).
#include <gtest/gtest.h>

#include <string>

#include "redisync/errors.h"
#include "sync/acquire/fair_poll.h"
#include "sync/acquire/spin_backoff.h"
#include "sync/hold/watchdog.h"

using namespace std::chrono_literals;
using redisync::Duration;
using redisync::SpinBackoff;
using redisync::sync::BackoffSequence;
using redisync::sync::RenewalKey;
using redisync::sync::RenewalKind;

TEST(SpinBackoffSequence, ExponentialFollowsTheSpecAndStaysAtTheCap) {
  BackoffSequence seq(SpinBackoff::exponential(), 42);
  std::vector<Duration> sleeps;
  for (int i = 0; i < 20; ++i) sleeps.push_back(seq.next());
  EXPECT_EQ(sleeps[0], 1ms);
  EXPECT_EQ(sleeps[1], 2ms);  // 1 * 2 + random in [0, 1)
  bool capped = false;
  for (std::size_t k = 1; k < sleeps.size(); ++k) {
    const auto prev = sleeps[k - 1];
    if (capped) {
      EXPECT_EQ(sleeps[k], 128ms);
      continue;
    }
    // After the k-th sleep: min(128, previous * 2 + a random integer in [0, k)).
    EXPECT_GE(sleeps[k], std::min(prev * 2, Duration{128})) << k;
    EXPECT_LE(sleeps[k],
              std::min(prev * 2 + Duration{static_cast<long long>(k) - 1}, Duration{128}))
        << k;
    capped = sleeps[k] == 128ms;
  }
  EXPECT_TRUE(capped);
  EXPECT_EQ(sleeps.back(), 128ms);
}

TEST(SpinBackoffSequence, SameSeedSameSequence) {
  BackoffSequence a(SpinBackoff::exponential(), 7), b(SpinBackoff::exponential(), 7);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(a.next(), b.next());
}

TEST(SpinBackoffSequence, ConstantAndCustomSettings) {
  BackoffSequence c(SpinBackoff::constant(), 1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(c.next(), 64ms);
  BackoffSequence c5(SpinBackoff::constant(5ms), 1);
  EXPECT_EQ(c5.next(), 5ms);
  BackoffSequence e(SpinBackoff::exponential(10ms, 25ms, 3), 1);
  EXPECT_EQ(e.next(), 10ms);
  EXPECT_EQ(e.next(), 25ms);  // min(25, 30 + 0)
  EXPECT_EQ(e.next(), 25ms);
}

TEST(SpinBackoffSequence, ValidateRejectsNonsense) {
  EXPECT_NO_THROW(SpinBackoff::exponential().validate());
  EXPECT_THROW(SpinBackoff::exponential(0ms).validate(), redisync::InvalidArgument);
  EXPECT_THROW(SpinBackoff::exponential(5ms, 1ms).validate(), redisync::InvalidArgument);
  EXPECT_THROW(SpinBackoff::exponential(1ms, 5ms, 0).validate(), redisync::InvalidArgument);
  EXPECT_THROW(SpinBackoff::constant(-1ms).validate(), redisync::InvalidArgument);
}

// Sleeps are timers: each one within redisync::max_duration like every other duration, and
// the growth never overflows (previous * multiplier stays at the cap).
TEST(SpinBackoffSequence, DurationsAreBoundedByMaxDuration) {
  using redisync::max_duration;
  const Duration over = max_duration + 1ms;
  const auto names_the_limit = [](const SpinBackoff& b, const std::string& field) {
    try {
      b.validate();
    } catch (const redisync::InvalidArgument& e) {
      const std::string what = e.what();
      return what.find(field) != std::string::npos &&
             what.find("max_duration") != std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(names_the_limit(SpinBackoff::exponential(over, over), "first"));
  EXPECT_TRUE(names_the_limit(SpinBackoff::exponential(1ms, over), "cap"));
  EXPECT_TRUE(names_the_limit(SpinBackoff::constant(over), "delay"));
  EXPECT_TRUE(names_the_limit(SpinBackoff::constant(Duration::max()), "delay"));
  EXPECT_NO_THROW(SpinBackoff::exponential(max_duration, max_duration).validate());
  EXPECT_NO_THROW(SpinBackoff::constant(max_duration).validate());

  // (10^12 - 1) * 10^7 ms is past the range of a 64-bit count: it used to wrap negative.
  const SpinBackoff steep = SpinBackoff::exponential(max_duration - 1ms, max_duration, 10'000'000);
  ASSERT_NO_THROW(steep.validate());
  BackoffSequence seq(steep, 3);
  EXPECT_EQ(seq.next(), max_duration - 1ms);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(seq.next(), max_duration);
}

TEST(FairPoll, UsesTheStepsEstimateAndBacksOffWithoutOne) {
  using redisync::sync::fair_poll_ms;
  constexpr long long a = 5000;  // the default allowance
  EXPECT_EQ(fair_poll_ms(700, 0, a), 700);
  EXPECT_EQ(fair_poll_ms(2500, 0, a), 1000);  // capped: re-poll at least every second
  EXPECT_EQ(fair_poll_ms(300000, 5, a), 1000);
  EXPECT_EQ(fair_poll_ms(0, 0, a), 10);
  EXPECT_EQ(fair_poll_ms(0, 1, a), 20);
  EXPECT_EQ(fair_poll_ms(-1, 2, a), 40);
  EXPECT_EQ(fair_poll_ms(0, 6, a), 640);
  EXPECT_EQ(fair_poll_ms(0, 7, a), 1000);
  EXPECT_EQ(fair_poll_ms(0, 1000, a), 1000);
}

TEST(FairPoll, PollsAtLeastThreeTimesPerAllowance) {
  using redisync::sync::fair_poll_ms;
  // Each poll refreshes the waiter's deadline, one allowance ahead: a short allowance polls
  // more often, so a live waiter is never taken for a dead one.
  EXPECT_EQ(fair_poll_ms(2500, 0, 1500), 500);
  EXPECT_EQ(fair_poll_ms(0, 1000, 1500), 500);
  EXPECT_EQ(fair_poll_ms(300, 0, 1500), 300);
  EXPECT_EQ(fair_poll_ms(2500, 0, 1), 10);  // never a busy loop
  EXPECT_EQ(fair_poll_ms(2500, 0, 300000), 1000);
}

TEST(ReadRenewalPlan, KeepsEveryFieldOfAHashInOneCall) {
  auto read = [](std::string key, std::string field) {
    return RenewalKey{std::move(key), std::move(field), RenewalKind::rwlock_read};
  };
  const std::vector<RenewalKey> regs{read("a", "1"), read("a", "2"), read("b", "1"), read("c", "1"),
                                     read("c", "2"), read("c", "3"), read("d", "1")};
  const auto batches = redisync::sync::plan_read_batches(regs, 2);  // 2 hashes per call
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].size(), 3u);  // a(2) b(1)
  EXPECT_EQ(batches[1].size(), 4u);  // c(3) d(1)
  EXPECT_EQ(batches[1][0].key, "c");
  EXPECT_EQ(redisync::sync::plan_read_batches(regs, 100).size(), 1u);
  EXPECT_EQ(redisync::sync::plan_read_batches(regs, 0).size(), 4u);
  EXPECT_TRUE(redisync::sync::plan_read_batches(std::vector<redisync::sync::RenewalKey>{}, 10).empty());
}
