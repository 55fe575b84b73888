// Pure decisions of the lock kinds: the spin lock's backoff sequence (§10), the fair lock's
// re-poll bound (§4.8), the read-lock renewal batches (§5.7).
#include <gtest/gtest.h>

#include "redisync/errors.h"
#include "sync/fair_poll.h"
#include "sync/spin_backoff.h"
#include "sync/watchdog.h"

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

TEST(FairPoll, UsesTheStepsEstimateAndBacksOffWithoutOne) {
  using redisync::sync::fair_poll_ms;
  EXPECT_EQ(fair_poll_ms(700, 0), 700);
  EXPECT_EQ(fair_poll_ms(2500, 0), 1000);  // capped: re-poll at least every second
  EXPECT_EQ(fair_poll_ms(300000, 5), 1000);
  EXPECT_EQ(fair_poll_ms(0, 0), 10);
  EXPECT_EQ(fair_poll_ms(0, 1), 20);
  EXPECT_EQ(fair_poll_ms(-1, 2), 40);
  EXPECT_EQ(fair_poll_ms(0, 6), 640);
  EXPECT_EQ(fair_poll_ms(0, 7), 1000);
  EXPECT_EQ(fair_poll_ms(0, 1000), 1000);
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
  EXPECT_TRUE(redisync::sync::plan_read_batches({}, 10).empty());
}
