// SPDX-License-Identifier: Apache-2.0
// layout_kind.h: a kind is claimed only when the keys prove it; keys several kinds write alike
// give every candidate (no Redis: the facts are written here).
#include <gtest/gtest.h>

#include "layout_kind.h"

namespace redisync::cli {
namespace {

using Kinds = std::vector<Kind>;

LayoutFacts hash(std::vector<std::pair<std::string, std::string>> fields) {
  LayoutFacts f;
  f.type = "hash";
  f.fields = std::move(fields);
  return f;
}

LayoutFacts string_of(std::string value) {
  LayoutFacts f;
  f.type = "string";
  f.value = std::move(value);
  return f;
}

TEST(CliLayoutKind, AnOwnerHashAloneIsALockOrAFairLockNobodyWaitsFor) {
  auto f = hash({{"0b7e3f2a:17", "1"}});
  EXPECT_EQ(kind_of_layout(f).candidates, (Kinds{Kind::lock, Kind::fair_lock}));
  EXPECT_EQ(kind_of_layout(f).label(kOtherData), "ambiguous");
  EXPECT_FALSE(may_be_plain_data(f));
  f.fair_queue = true;
  EXPECT_EQ(kind_of_layout(f).candidates, Kinds{Kind::fair_lock});
  f.fair_queue = false;
  f.fence_counter = true;
  EXPECT_EQ(kind_of_layout(f).candidates, Kinds{Kind::fenced_lock});
}

TEST(CliLayoutKind, ModeRateAndUserHashes) {
  EXPECT_EQ(kind_of_layout(hash({{"mode", "read"}, {"c:1", "2"}})).candidates,
            Kinds{Kind::read_write_lock});
  EXPECT_EQ(kind_of_layout(hash({{"mode", "write"}, {"c:1:write", "1"}})).candidates,
            Kinds{Kind::read_write_lock});
  EXPECT_EQ(kind_of_layout(hash({{"rate", "5"}, {"interval", "1000"}, {"type", "0"}})).candidates,
            Kinds{Kind::rate_limiter});
  EXPECT_TRUE(kind_of_layout(hash({{"user", "bob"}})).candidates.empty());
  EXPECT_TRUE(kind_of_layout(hash({{"c:1", "1"}, {"user", "bob"}})).candidates.empty());
  EXPECT_TRUE(kind_of_layout(hash({{"c:1", "0"}})).candidates.empty()) << "a count >= 1";
}

TEST(CliLayoutKind, AnIntegerAloneIsAnyCountOrAnybodysNumber) {
  auto f = string_of("5");
  EXPECT_EQ(kind_of_layout(f).candidates,
            (Kinds{Kind::semaphore, Kind::permit_expirable_semaphore, Kind::count_down_latch}));
  EXPECT_TRUE(may_be_plain_data(f));
  f.permit_timeouts = true;
  EXPECT_EQ(kind_of_layout(f).candidates, Kinds{Kind::permit_expirable_semaphore});
  EXPECT_FALSE(may_be_plain_data(f));
  EXPECT_TRUE(kind_of_layout(string_of("hello")).candidates.empty());
  EXPECT_TRUE(kind_of_layout(string_of("")).candidates.empty());
}

TEST(CliLayoutKind, NothingStoredUnlessAFairQueueWaits) {
  LayoutFacts f;
  f.type = "none";
  EXPECT_TRUE(kind_of_layout(f).candidates.empty());
  EXPECT_EQ(kind_of_layout(f).label(kNoKind), "none");
  f.fair_queue = true;
  EXPECT_EQ(kind_of_layout(f).candidates, Kinds{Kind::fair_lock});
  LayoutFacts list;
  list.type = "list";
  EXPECT_TRUE(kind_of_layout(list).candidates.empty());
}

}  // namespace
}  // namespace redisync::cli
