// SPDX-License-Identifier: Apache-2.0
// Issue 17 item 2: which names keep every key and channel of a primitive in one cluster slot.
// Checked against the slot function itself for each key shape the layout builds.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "net/cluster_slot.h"
#include "sync/identity.h"

using redisync::net::key_slot;
using redisync::sync::hash_tag;
using redisync::sync::one_slot_name;

namespace {

// The key shapes of the wire spec: N, P:TAG(N), TAG(N):S.
bool same_slot_for_every_shape(const std::string& n) {
  const auto slot = key_slot(n);
  return key_slot("redisson_lock__channel:" + hash_tag(n)) == slot &&
         key_slot("redisson_lock_queue:" + hash_tag(n)) == slot &&
         key_slot(hash_tag(n) + ":timeout") == slot &&
         key_slot(hash_tag(n) + ":0123-uuid:7:rwlock_timeout:1") == slot;
}

}  // namespace

TEST(ClusterName, BraceNamesThatSplitSlotsAreExactlyTheRefusedOnes) {
  const std::vector<std::string> names{
      "a{", "{}", "x{y", "a}b", "}", "{", "x{}y", "{}{a}", "a{b}", "{a}b", "x}{y}", "plain",
      "a{b}c{", "}{", "{{}}", "{{a}}", "a b", std::string("\0{x}", 4), "\xff{\x01}"};
  for (const auto& n : names) {
    if (one_slot_name(n)) {
      EXPECT_TRUE(same_slot_for_every_shape(n)) << n;
    }
  }
  for (const char* bad : {"a{", "{}", "x{y", "a}b", "}", "{", "x{}y", "{}{a}"}) {
    EXPECT_FALSE(one_slot_name(bad)) << bad;
    EXPECT_FALSE(same_slot_for_every_shape(bad)) << bad;
  }
  for (const char* good : {"a{b}", "{a}b", "x}{y}", "plain", "{{a}}"}) {
    EXPECT_TRUE(one_slot_name(good)) << good;
  }
}

TEST(ClusterName, EveryShortNameOverASmallAlphabetIsJudgedRight) {
  const std::string alphabet = "ab{}:";
  std::vector<std::string> names{""};
  for (int len = 1; len <= 5; ++len) {
    std::vector<std::string> next;
    for (const auto& n : names) {
      for (char c : alphabet) next.push_back(n + c);
    }
    // Every accepted name keeps its keys in one slot. (A refused name may still land in one
    // slot by a CRC16 collision, e.g. "::}}:": the rule refuses by shape, not by luck.)
    for (const auto& n : next) {
      if (one_slot_name(n)) {
      EXPECT_TRUE(same_slot_for_every_shape(n)) << n;
    }
    }
    names = std::move(next);
  }
}
