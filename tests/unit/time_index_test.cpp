// SPDX-License-Identifier: Apache-2.0
// TimeIndex (src/sync/hold/time_index.h): items in time order, earliest first, those of one
// time in the order they were placed, whatever the order of placing, moving and removing.
#include "sync/hold/time_index.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <set>
#include <utility>
#include <vector>

using redisync::sync::TimeIndex;
using Time = TimeIndex<struct Item>::Time;

struct Item {
  int id = 0;
  TimeIndex<Item>::Hook hook;
};

namespace {

Time at_ms(int ms) { return Time{} + std::chrono::milliseconds(ms); }

std::vector<int> order(const TimeIndex<Item>& index) {
  std::vector<int> ids;
  index.walk([&](Time, Item& item) {
    ids.push_back(item.id);
    return true;
  });
  return ids;
}

TEST(TimeIndex, KeepsTimeOrderAndPlacingOrderWithinATime) {
  std::vector<Item> items(6);
  for (int i = 0; i < 6; ++i) items[i].id = i;
  TimeIndex<Item> index;
  EXPECT_TRUE(index.empty());
  EXPECT_FALSE(index.earliest());
  index.place(items[0].hook, items[0], at_ms(20));
  index.place(items[1].hook, items[1], at_ms(10));  // earlier than the last time
  index.place(items[2].hook, items[2], at_ms(20));  // the last time again
  index.place(items[3].hook, items[3], at_ms(30));  // later
  index.place(items[4].hook, items[4], at_ms(10));
  index.place(items[5].hook, items[5], at_ms(15));
  EXPECT_EQ(order(index), (std::vector<int>{1, 4, 5, 0, 2, 3}));
  EXPECT_EQ(*index.earliest(), at_ms(10));
  EXPECT_EQ(items[5].hook.at(), at_ms(15));
}

TEST(TimeIndex, MovingAndRemovingLeaveTheRestInOrder) {
  std::vector<Item> items(4);
  for (int i = 0; i < 4; ++i) items[i].id = i;
  TimeIndex<Item> index;
  for (auto& item : items) index.place(item.hook, item, at_ms(10));
  index.remove(items[1].hook);                      // from the middle of a time
  index.place(items[0].hook, items[0], at_ms(40));  // the first moved last
  EXPECT_EQ(order(index), (std::vector<int>{2, 3, 0}));
  index.remove(items[2].hook);
  index.remove(items[3].hook);  // the time 10 has no item left
  EXPECT_EQ(*index.earliest(), at_ms(40));
  index.remove(items[3].hook);  // not placed: nothing
  EXPECT_FALSE(items[3].hook.placed());
  index.remove(items[0].hook);
  EXPECT_TRUE(index.empty());
  index.place(items[1].hook, items[1], at_ms(5));  // the emptied index takes items again
  EXPECT_EQ(order(index), (std::vector<int>{1}));
}

TEST(TimeIndex, AWalkStopsWhereItsVisitSays) {
  std::vector<Item> items(5);
  TimeIndex<Item> index;
  for (int i = 0; i < 5; ++i) {
    items[i].id = i;
    index.place(items[i].hook, items[i], at_ms(i));
  }
  int visited = 0;
  index.walk([&](Time at, Item&) { return at <= at_ms(2) && ++visited > 0; });
  EXPECT_EQ(visited, 3);
}

TEST(TimeIndex, TheFirstItemCanBeMovedLaterOneAtATime) {
  // The renewal table's take: the front item, placed again later, until the front is late.
  std::vector<Item> items(4);
  TimeIndex<Item> index;
  EXPECT_FALSE(index.first());
  for (int i = 0; i < 4; ++i) {
    items[i].id = i;
    index.place(items[i].hook, items[i], at_ms(i < 2 ? 5 : 7));
  }
  std::vector<int> taken;
  while (auto front = index.first()) {
    if (front->first > at_ms(6)) break;
    taken.push_back(front->second->id);
    index.place(front->second->hook, *front->second, at_ms(100));
  }
  EXPECT_EQ(taken, (std::vector<int>{0, 1}));
  EXPECT_EQ(order(index), (std::vector<int>{2, 3, 0, 1}));
  EXPECT_EQ(index.first()->first, at_ms(7));
  EXPECT_EQ(index.first()->second, &items[2]);
}

TEST(TimeIndex, MatchesAnOrderedSetThroughRandomPlacesAndRemovals) {
  // The reference: (time, placing sequence number) pairs; the index must walk in its order.
  constexpr int kItems = 200;
  std::vector<Item> items(kItems);
  std::vector<std::pair<int, long>> key(kItems);  // placed: (ms, sequence); else ms = -1
  std::set<std::pair<std::pair<int, long>, int>> reference;
  TimeIndex<Item> index;
  std::mt19937 rng(7);
  long sequence = 0;
  for (int i = 0; i < kItems; ++i) {
    items[i].id = i;
    key[i] = {-1, 0};
  }
  for (int step = 0; step < 20000; ++step) {
    const int i = static_cast<int>(rng() % kItems);
    if (key[i].first >= 0) reference.erase({key[i], i});
    if (rng() % 4 == 0) {
      index.remove(items[i].hook);
      key[i] = {-1, 0};
    } else {
      const int ms = static_cast<int>(rng() % 30);  // few times: shared buckets
      index.place(items[i].hook, items[i], at_ms(ms));
      key[i] = {ms, sequence++};
      reference.insert({key[i], i});
    }
    if (step % 97 == 0) {
      std::vector<int> expected;
      for (const auto& [k, id] : reference) expected.push_back(id);
      ASSERT_EQ(order(index), expected) << "after step " << step;
      if (!reference.empty()) {
        ASSERT_EQ(*index.earliest(), at_ms(reference.begin()->first.first));
      }
    }
  }
}

}  // namespace
