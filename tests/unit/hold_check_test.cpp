// SPDX-License-Identifier: Apache-2.0
// The answer of a recheck or settle step (src/sync/acquire/hold_check.h), without a server: a
// hold found is an acquisition; in grant mode, one the grant mark names for this owner is a
// grant not taken yet, whose lease is what the server has left of it (issue 36).
#include <gtest/gtest.h>

#include <string>

#include "sync/acquire/hold_check.h"

using namespace std::chrono_literals;
using redisync::Duration;
using redisync::sync::Clock;
using redisync::sync::HoldRead;
using redisync::sync::judge_hold;

namespace {

const Clock::time_point t0 = Clock::time_point{} + 1000s;
const std::string kField = "c1:7";
const std::string kGrant = "0123456789abcdef";  // this acquisition's grant id

HoldRead read(long long count, long long pttl, std::string mark) {
  HoldRead r;
  r.count = count;
  r.pttl_ms = pttl;
  r.mark = std::move(mark);
  return r;
}

}  // namespace

TEST(HoldCheckTest, NoHoldOrAnEarlierCountIsNotAnAcquisition) {
  for (const long long count : {0LL, 1LL, 3LL}) {
    const auto r = judge_hold(read(count, 5000, kField + " 0123456789abcdef"), 1, kField, kGrant, false, t0);
    EXPECT_FALSE(r.acquired) << count;
    EXPECT_FALSE(r.grant) << count;
  }
}

TEST(HoldCheckTest, AHoldWithoutAGrantMarkIsAnOrdinaryAcquisition) {
  const auto r = judge_hold(read(1, 30000, ""), 0, kField, kGrant, false, t0);
  EXPECT_TRUE(r.acquired);
  EXPECT_FALSE(r.grant);
}

TEST(HoldCheckTest, AHoldTheGrantMarkNamesIsAGrantWithTheLeaseTheServerHasLeft) {
  const auto r = judge_hold(read(1, 1234, kField + " 0123456789abcdef"), 0, kField, kGrant, false, t0);
  ASSERT_TRUE(r.acquired);
  ASSERT_TRUE(r.grant);
  EXPECT_EQ(r.grant->lease, Duration{1234});
  EXPECT_EQ(r.grant->read_sent, t0);  // counted from the step's send, before the server read
}

TEST(HoldCheckTest, AMarkForAnotherOwnerIsNoGrantOfOurs) {
  // Another field, one that only starts like ours, and a mark with no id.
  for (const std::string& mark : {std::string("c2:7 0123456789abcdef"),
                                  kField + "0 0123456789abcdef", kField + " ", kField}) {
    const auto r = judge_hold(read(1, 1500, mark), 0, kField, kGrant, false, t0);
    EXPECT_TRUE(r.acquired) << mark;
    EXPECT_FALSE(r.grant) << mark;
  }
}

TEST(HoldCheckTest, AMarkedHoldWithoutExpiryIsAnOrdinaryAcquisition) {
  // No expiry on the server (PTTL -1): no grant lease to bound the hold.
  const auto r = judge_hold(read(1, -1, kField + " 0123456789abcdef"), 0, kField, kGrant, false, t0);
  EXPECT_TRUE(r.acquired);
  EXPECT_FALSE(r.grant);
}

TEST(HoldCheckTest, AReentrantOwnersNextCountIsItsAcquisition) {
  const auto r = judge_hold(read(3, 30000, ""), 2, kField, kGrant, false, t0);
  EXPECT_TRUE(r.acquired);
  EXPECT_FALSE(r.grant);
}

// A MultiLock's walks can leave two acquisitions of one owner side by side; only one is listed
// for grants. A grant made to it is its to take (its message, or its own recheck): counted by
// the other as well, the Client would count two holds where the server has one.
TEST(HoldCheckTest, AGrantToAnotherWaitingAcquisitionOfTheOwnerIsNotThisOnes) {
  const std::string others = kField + " fedcba9876543210";
  EXPECT_FALSE(judge_hold(read(1, 1234, others), 0, kField, kGrant, true, t0).acquired);
  EXPECT_FALSE(judge_hold(read(1, 1234, others), 0, kField, "", true, t0).acquired);
  // Its own grant it takes, as a grant, whoever else waits.
  const auto own = judge_hold(read(1, 1234, kField + " " + kGrant), 0, kField, kGrant, true, t0);
  EXPECT_TRUE(own.acquired);
  EXPECT_TRUE(own.grant);
  // No other acquisition waits: a mark left by one that took its grant (its extension not
  // run yet) says nothing against this acquisition's own hold.
  const auto left = judge_hold(read(2, 1234, others), 1, kField, kGrant, false, t0);
  EXPECT_TRUE(left.acquired);
}
