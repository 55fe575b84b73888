// SPDX-License-Identifier: Apache-2.0
// The watchdog's pure decisions: batching and lease expiry with a fake clock.
#include <gtest/gtest.h>

#include "sync/counters/permit_lease_watch.h"
#include "sync/hold/watchdog.h"

using namespace std::chrono_literals;
using redisync::sync::Clock;
using redisync::sync::lease_ran_out;
using redisync::sync::plan_batches;
using redisync::sync::RenewalKey;

TEST(WatchdogPlan, BatchesOfAtMostBatchSize) {
  std::vector<RenewalKey> keys;
  for (int i = 0; i < 10000; ++i) keys.push_back({"k" + std::to_string(i), "f"});
  auto batches = plan_batches(keys, 100);
  ASSERT_EQ(batches.size(), 100u);  // 10,000 locks: 100 script calls per period
  for (const auto& b : batches) EXPECT_EQ(b.size(), 100u);
  EXPECT_EQ(plan_batches(keys, 3000).back().size(), 1000u);
  EXPECT_TRUE(plan_batches(std::vector<RenewalKey>{}, 100).empty());
  EXPECT_EQ(plan_batches(std::vector<RenewalKey>(7, {"k", "f"}), 0).size(), 7u);
}

// The local deadline (issue 17 item 3): a tenth of the lease before the lease could end on
// the server, counted from the send time of the last acknowledged renewal.
TEST(WatchdogPlan, LeaseRunsOutATenthOfTheLeaseBeforeItCouldEndOnTheServer) {
  const auto t0 = Clock::time_point{} + 100s;
  EXPECT_FALSE(lease_ran_out(t0, t0 + 26999ms, 30s));
  EXPECT_TRUE(lease_ran_out(t0, t0 + 27s, 30s));
  EXPECT_TRUE(lease_ran_out(t0, t0 + 30s, 30s));
  EXPECT_TRUE(lease_ran_out(t0, t0 + 45s, 30s));
  EXPECT_EQ(redisync::sync::loss_margin(30s), 3s);
  EXPECT_EQ(redisync::sync::loss_margin(5ms), 1ms);  // at least 1 ms
  EXPECT_EQ(redisync::sync::local_deadline(t0, 1000ms), t0 + 900ms);
}

// Issue 36 item 7: a permit's check point reads the server's remaining lease. Held longer than
// assumed (by more than the loss margin: a Java client extended it): the watch moves there,
// counted from the check's send time. Otherwise the notice comes at the local deadline as
// before; gone: at once; no expiry: never.
TEST(WatchdogPlan, PermitCheckPointFollowsTheServersExpiry) {
  using redisync::detail::PermitExpiryVerdict;
  using redisync::detail::read_permit_expiry;
  const auto sent = Clock::time_point{} + 100s;
  const auto asked = sent + 810ms;  // the check point of a 1 s lease
  const auto lease = redisync::Duration{1000};
  // The server's remaining lease as assumed (190 ms), or a little more (latency): keep.
  EXPECT_EQ(read_permit_expiry(sent, lease, asked, 190).action, PermitExpiryVerdict::keep);
  EXPECT_EQ(read_permit_expiry(sent, lease, asked, 290).action, PermitExpiryVerdict::keep);
  // Extended: moved, the new lease counted from the check's send time.
  const auto moved = read_permit_expiry(sent, lease, asked, 59000);
  EXPECT_EQ(moved.action, PermitExpiryVerdict::move);
  EXPECT_EQ(moved.lease, redisync::Duration{59000});
  EXPECT_EQ(moved.sent, asked);
  EXPECT_EQ(read_permit_expiry(sent, lease, asked, 291).action, PermitExpiryVerdict::move);
  EXPECT_EQ(read_permit_expiry(sent, lease, asked, -1).action, PermitExpiryVerdict::no_expiry);
  EXPECT_EQ(read_permit_expiry(sent, lease, asked, -2).action, PermitExpiryVerdict::gone);
  EXPECT_EQ(read_permit_expiry(sent, lease, asked, std::nullopt).action,
            PermitExpiryVerdict::unanswered);
}
