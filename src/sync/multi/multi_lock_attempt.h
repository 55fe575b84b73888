// SPDX-License-Identifier: Apache-2.0
// The MultiLock / RedLock acquisition as one asynchronous state machine (docs/wire-format.md §6):
// walk the members in order, each with its own wait and a timer bounding how long its answer
// is awaited; tolerate the policy's failures; release what was taken when a walk fails;
// restart while the wait lasts; on success set each key's expiry to the lease (step 5) and
// compute the validity time.
//
// Threading: members may live on different Clients (different I/O threads). Every callback
// takes the attempt's mutex; completions are called without it held.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "redisync/metrics.h"
#include "redisync/multi_lock.h"
#include "sync/multi/multi_lock_member.h"

namespace redisync::detail {

class CancelSignal;

using MemberPtr = std::shared_ptr<const MultiLockMember>;

/// What a MultiLock handle and its copies share.
struct MultiLockState {
  std::vector<MemberPtr> members;
  MultiLockOptions options;
  MultiLockPolicy policy;

  std::mutex mutex;  // guards what follows
  /// One (reentrant) acquisition of the composite: the members it took, and the lineage of
  /// each member's hold it joined (MultiLockMember::lineage), in the same order.
  struct Held {
    std::vector<std::size_t> members;
    std::vector<std::uint64_t> lineages;
  };
  /// Per owner, its acquisitions, newest last.
  std::map<std::int64_t, std::vector<Held>> holds;
  /// Per owner holding it, when its first (outermost) hold was taken: the hold time.
  std::map<std::int64_t, std::chrono::steady_clock::time_point> held_since;
  AttemptReport last;

  /// "multi[a, b]": the name errors and metrics give it.
  std::string name() const;
  /// The Metrics hook of the first member's Client (nullptr: none), and the kind it reports
  /// under: "red_lock" (tolerant policy) or "multi_lock".
  Metrics* metrics() const;
  std::string_view metrics_kind() const { return policy.tolerant ? "red_lock" : "multi_lock"; }

  std::size_t required() const {
    return members.size() - static_cast<std::size_t>(policy.tolerated_failures);
  }
};

using AttemptDone = std::function<void(std::exception_ptr, AttemptReport)>;

/// One "try lock (wait, lease)" of docs/wire-format.md §6. wait <= 0: one attempt per member; lease <= 0:
/// watchdog leases. `done` always gets a report (the exception is for internal failures
/// and CancelledError only; member failures are outcomes in the report). `cancel` (async
/// callers whose handler has a cancellation slot; may be nullptr): a cancellation requested
/// on it ends the try with CancelledError, the members it took released (multi_lock_try.h).
void start_multi_try(const std::shared_ptr<MultiLockState>& state, std::int64_t owner,
                     Duration wait, Duration lease, AttemptDone done,
                     std::shared_ptr<CancelSignal> cancel = nullptr);

/// Blocking-lock semantics over start_multi_try: repeats tries with the internal wait of
/// docs/wire-format.md §6 until acquired; fails with MultiLockError when a try finds more members failing
/// (not merely held by others) than the policy tolerates. `cancel`: as for start_multi_try.
void start_multi_lock(const std::shared_ptr<MultiLockState>& state, std::int64_t owner,
                      Duration lease, std::function<void(std::exception_ptr)> done,
                      std::shared_ptr<CancelSignal> cancel = nullptr);

/// Releases what `owner`'s newest acquisition took (every member when none is recorded).
void start_multi_unlock(const std::shared_ptr<MultiLockState>& state, std::int64_t owner,
                        std::function<void(ReleaseResult, std::exception_ptr)> done);

/// Is `owner` holding it (all members; a majority under a tolerant policy)?
void start_multi_is_held(const std::shared_ptr<MultiLockState>& state, std::int64_t owner,
                         std::function<void(std::exception_ptr, bool)> done);

}  // namespace redisync::detail
