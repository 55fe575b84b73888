// SPDX-License-Identifier: Apache-2.0
// The numbers `redisync demo` reports, computed from the workers' event files and the counter.
// Pure functions, no I/O.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "events.h"

namespace redisync::cli {

struct WorkerOutcome {
  int id = 0;
  pid_t pid = -1;
  std::vector<SectionTimes> sections;  ///< completed sections (from its event file)
  bool killed = false;                 ///< the demo SIGKILLed it inside its critical section
  int exit_code = 0;                   ///< 128+9 for the killed one
};

struct DemoStats {
  std::int64_t sections = 0;    ///< completed sections, all workers
  long long counter_delta = 0;  ///< counter increase seen in Redis
  /// Completed sections whose increment is missing from the counter. Must be 0.
  long long lost_updates = 0;
  /// The killed worker's unfinished section wrote its increment before it died (allowed:
  /// it is the one increment the counter may have beyond the completed sections).
  bool in_flight_written = false;
  /// Increments beyond the completed sections plus that one allowance (someone else wrote the
  /// counter). Must be 0.
  long long unexplained_increments = 0;
  /// Sections whose acquire returned before the previous holder's release was called: two
  /// holders at once. Must be 0.
  std::int64_t overlaps = 0;
  /// Handoff to a waiting holder: one section's release called (t2) -> the next section's
  /// acquire returned (t1'), sections ordered by t1, counting only next holders that were
  /// already waiting when that release was called (t0' < t2); the gap across the kill is
  /// recovery, not handoff. Empty when no holder waited.
  std::optional<double> handoff_p50_us;
  std::optional<double> handoff_p99_us;
  /// First acquire return after the kill, minus the kill instant.
  std::optional<double> recovery_ms;
  std::vector<double> share_percent;  ///< per worker, in the order given
};

/// `kill_ns`: CLOCK_MONOTONIC instant of the SIGKILL, if one was sent.
DemoStats analyze_demo(const std::vector<WorkerOutcome>& workers, long long counter_delta,
                       std::optional<std::int64_t> kill_ns);

/// Nearest-rank percentile (p in [0, 100]) of `sorted` (ascending, non-empty).
std::int64_t percentile(const std::vector<std::int64_t>& sorted, double p);

}  // namespace redisync::cli
