// SPDX-License-Identifier: Apache-2.0
// The spin lock's retry schedule (docs/wire-format.md §10). Its waiting is AcquireFsm's
// polling mode (AcquireFsm::Settings::spin), driven by AcquireLoop as every kind's is.
#pragma once

#include <cstdint>
#include <random>

#include "redisync/spin_lock.h"

namespace redisync::sync {

/// The sleeps of one waiter, in order. Pure (a seeded generator), for unit tests.
class BackoffSequence {
 public:
  BackoffSequence(const SpinBackoff& settings, std::uint64_t seed);
  /// The next sleep.
  Duration next();

 private:
  SpinBackoff settings_;
  std::mt19937_64 rng_;
  Duration previous_{0};
  long long sleeps_ = 0;  // k: sleeps handed out so far
};

}  // namespace redisync::sync
