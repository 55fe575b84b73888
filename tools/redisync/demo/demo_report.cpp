// SPDX-License-Identifier: Apache-2.0
#include "demo_report.h"

#include <algorithm>
#include <cmath>

namespace redisync::cli {

std::int64_t percentile(const std::vector<std::int64_t>& sorted, double p) {
  const auto n = static_cast<double>(sorted.size());
  const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * n));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

DemoStats analyze_demo(const std::vector<WorkerOutcome>& workers, long long counter_delta,
                       std::optional<std::int64_t> kill_ns) {
  DemoStats st;
  st.counter_delta = counter_delta;
  std::vector<SectionTimes> all;
  bool any_killed = false;
  for (const auto& w : workers) {
    all.insert(all.end(), w.sections.begin(), w.sections.end());
    any_killed = any_killed || w.killed;
  }
  st.sections = static_cast<std::int64_t>(all.size());
  for (const auto& w : workers) {
    st.share_percent.push_back(all.empty() ? 0.0
                                           : 100.0 * static_cast<double>(w.sections.size()) /
                                                 static_cast<double>(all.size()));
  }

  // Every completed section added exactly one; the killed worker's unfinished section may
  // have added one more (if it died after its SET). Anything below is a lost update.
  const long long completed = st.sections;
  if (counter_delta < completed) {
    st.lost_updates = completed - counter_delta;
  } else {
    const long long extra = counter_delta - completed;
    const long long allowed = any_killed ? 1 : 0;
    st.in_flight_written = any_killed && extra >= 1;
    st.unexplained_increments = std::max(0LL, extra - allowed);
  }

  std::sort(all.begin(), all.end(),
            [](const SectionTimes& a, const SectionTimes& b) { return a.t1 < b.t1; });
  std::vector<std::int64_t> gaps;
  std::int64_t latest_release_call = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (i > 0) {
      const SectionTimes& prev = all[i - 1];
      const SectionTimes& next = all[i];
      // Causality: the next holder's acquire returns only after the server ran the previous
      // release, which was called at t2. Returning earlier means two holders at once.
      if (next.t1 < latest_release_call) ++st.overlaps;
      // The handoff a waiter experiences: the previous release called (t2) -> its own acquire
      // returned (t1'), counted only for a holder already waiting when that release was called
      // (t0' < t2). Not t1' - t3: that subtracts the releaser's own return delay, which
      // depends on which process the scheduler runs first, and can read below one round trip.
      const bool waited = next.t0 < prev.t2 && next.t1 >= prev.t2;
      const bool spans_kill = kill_ns && prev.t3 <= *kill_ns && next.t1 > *kill_ns;
      if (waited && !spans_kill) gaps.push_back(next.t1 - prev.t2);
    }
    latest_release_call = std::max(latest_release_call, all[i].t2);
  }
  if (!gaps.empty()) {
    std::sort(gaps.begin(), gaps.end());
    st.handoff_p50_us = static_cast<double>(percentile(gaps, 50)) / 1000.0;
    st.handoff_p99_us = static_cast<double>(percentile(gaps, 99)) / 1000.0;
  }
  if (kill_ns) {
    for (const auto& s : all) {
      if (s.t1 > *kill_ns) {
        st.recovery_ms = static_cast<double>(s.t1 - *kill_ns) / 1e6;
        break;
      }
    }
  }
  return st;
}

}  // namespace redisync::cli
