// SPDX-License-Identifier: Apache-2.0
// What the chaos test files share: small helpers, the negative control's assertion, and the
// shorter run length of the cases added after the first results table.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "chaos/chaos_run.h"

namespace redisync::chaos {

inline std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

inline std::chrono::milliseconds ms(long n) { return std::chrono::milliseconds(n); }

/// The deliberately broken locks of chaos_worker.cpp (the negative control).
inline bool is_broken(const std::string& kind) { return kind.rfind("broken-", 0) == 0; }

/// The run length of a case added after the first results table (rw-mix, the semaphores,
/// the latch, the negative control of the process-fault cases): the default, at most `cap`
/// ms. Together they may add about a minute to the suite (CI's time budget).
inline long shorter_ms(long cap) { return std::min(default_duration_ms(), cap); }

/// The negative control: the checker must have caught the broken kind of `label`.
inline void expect_caught(const Verdict& v, const std::string& kind, const std::string& label) {
  EXPECT_FALSE(v.ok()) << "NEGATIVE CONTROL: the checker passed the broken lock " << kind << " in "
                       << label;
  EXPECT_GT(v.unexplained_overlaps + v.lost_updates + v.unexplained_breaks, 0) << v.summary(label);
}

}  // namespace redisync::chaos
