// SPDX-License-Identifier: Apache-2.0
// Items ordered by a time point, earliest first: the renewal table's two schedules (when each
// hold's renewal is due, and each hold's local deadline; renewal_table.h).
//
// Why not a std::multiset of (time, item): at 100,000 holds every renewal moved two tree nodes
// (an extract, a rebalance, an insert), and the tree's nodes were two allocations per hold;
// those moves and the allocator's bookkeeping were most of a Client's CPU while holding (issue
// 34). Here items of one time share a bucket (a renewal round's holds are all due, sent and
// answered at one time each), and each item's place is a hook inside the item itself:
// - placing an item at the last bucket's time, or after it, is O(1) (the usual case);
// - at an earlier time, O(log b) in the b distinct times (buckets), never in the items;
// - removing an item is O(1) (and O(log b) when its bucket empties);
// - the earliest time is O(1); a walk from the earliest visits only what it takes.
// Within a bucket, items keep the order they were placed in.
//
// Threading: none of its own (the renewal table's, the I/O thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

namespace redisync::sync {

template <class Item>
class TimeIndex {
 public:
  using Time = std::chrono::steady_clock::time_point;

  /// An item's place in one index, kept inside the item. It must not move while placed.
  class Hook {
   public:
    Hook() = default;
    Hook(const Hook&) = delete;
    Hook& operator=(const Hook&) = delete;
    bool placed() const { return item_ != nullptr; }
    /// The time it is placed at (meaningful while placed()).
    Time at() const { return at_; }

   private:
    friend class TimeIndex;
    Item* item_ = nullptr;  // null: not placed (and in a bucket's own end-of-list hook)
    Hook* prev_ = nullptr;
    Hook* next_ = nullptr;
    Time at_{};
  };

  /// `steps` (optional): incremented once per time comparison, for the cost tests.
  explicit TimeIndex(std::uint64_t* steps = nullptr) : buckets_(CountingLess{steps}) {}
  TimeIndex(const TimeIndex&) = delete;
  TimeIndex& operator=(const TimeIndex&) = delete;

  /// Places `item` (whose hook is `hook`) at `at`, last among the items of that time; moves it
  /// if it was placed elsewhere.
  void place(Hook& hook, Item& item, Time at) {
    if (hook.placed()) remove(hook);
    Hook& end = bucket_at(at).end;
    hook.item_ = &item;
    hook.at_ = at;
    hook.prev_ = end.prev_;
    hook.next_ = &end;
    end.prev_->next_ = &hook;
    end.prev_ = &hook;
  }

  /// Takes the hook's item out; nothing when it is not placed.
  void remove(Hook& hook) {
    if (!hook.placed()) return;
    hook.prev_->next_ = hook.next_;
    hook.next_->prev_ = hook.prev_;
    // A bucket whose end hook links to itself has no item left.
    if (hook.next_ == hook.prev_ && hook.next_->item_ == nullptr) buckets_.erase(hook.at_);
    hook.item_ = nullptr;
    hook.prev_ = hook.next_ = nullptr;
  }

  bool empty() const { return buckets_.empty(); }
  /// The earliest time an item is placed at.
  std::optional<Time> earliest() const {
    if (buckets_.empty()) return std::nullopt;
    return buckets_.begin()->first;
  }

  /// The earliest time and its first-placed item, or nullopt when empty. O(1).
  std::optional<std::pair<Time, Item*>> first() const {
    if (buckets_.empty()) return std::nullopt;
    const auto& [at, bucket] = *buckets_.begin();
    return std::pair<Time, Item*>{at, bucket.end.next_->item_};
  }

  /// Calls `visit(time, item)` in order, earliest first, until it returns false. `visit` must
  /// not place or remove items.
  template <class Visit>
  void walk(Visit&& visit) const {
    for (const auto& [at, bucket] : buckets_) {
      for (const Hook* h = bucket.end.next_; h != &bucket.end; h = h->next_) {
        if (!visit(at, *h->item_)) return;
      }
    }
  }

 private:
  struct CountingLess {
    std::uint64_t* steps;
    bool operator()(Time a, Time b) const {
      if (steps) ++*steps;
      return a < b;
    }
  };
  // The items of one time, as a ring through its own end hook (so that an item leaves in O(1)
  // without knowing its bucket). Map nodes do not move, so the end hook's address holds.
  struct Bucket {
    Hook end;
  };

  Bucket& bucket_at(Time at) {
    typename std::map<Time, Bucket, CountingLess>::iterator it;
    if (buckets_.empty() || buckets_.rbegin()->first < at) {
      it = buckets_.emplace_hint(buckets_.end(), std::piecewise_construct,
                                 std::forward_as_tuple(at), std::forward_as_tuple());
    } else if (!(at < buckets_.rbegin()->first)) {
      it = std::prev(buckets_.end());  // the last bucket's time
    } else {
      it = buckets_.try_emplace(at).first;
    }
    Hook& end = it->second.end;
    if (end.next_ == nullptr) end.next_ = end.prev_ = &end;  // a new bucket: an empty ring
    return it->second;
  }

  std::map<Time, Bucket, CountingLess> buckets_;
};

}  // namespace redisync::sync
