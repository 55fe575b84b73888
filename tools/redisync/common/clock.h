// SPDX-License-Identifier: Apache-2.0
// CLOCK_MONOTONIC in nanoseconds: the time base of event files, shared by all processes of
// one machine (std::chrono::steady_clock is the same clock on Linux).
#pragma once

#include <time.h>

#include <cstdint>

namespace redisync::cli {

inline std::int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// Sleeps until CLOCK_MONOTONIC >= `target_ns`: sleeps until ~1 ms before, then spins, so
/// workers released by the same instant start within microseconds of each other.
void sleep_until_ns(std::int64_t target_ns);

}  // namespace redisync::cli
