// One walk-and-retry "try lock" of the multi-lock (docs/wire-format.md §6), without the
// Metrics hook: start_multi_try (multi_lock_attempt.h) meters it, start_multi_lock repeats it.
#pragma once

#include <cstdint>
#include <memory>

#include "sync/multi/multi_lock_attempt.h"

namespace redisync::detail {

void run_multi_try(const std::shared_ptr<MultiLockState>& state, std::int64_t owner, Duration wait,
                   Duration lease, AttemptDone done);

/// A uniformly random integer in [low, high); low when the range is empty.
long long random_between(long long low, long long high);

}  // namespace redisync::detail
