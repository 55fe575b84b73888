// SPDX-License-Identifier: Apache-2.0
// The chaos checker for CountDownLatch (tests/chaos/latch_chaos_test.cpp): awaiters wait on
// a latch of count C while counters count it down (some killed mid-way); the history says
// when each count-down began and returned and when each wait returned.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace redisync::chaos {

/// History lines of the latch workers (times CLOCK_MONOTONIC ns; format in latch_worker.cpp):
///   D <id> <seq> <time>                        about to call count_down()
///   C <id> <seq> <time>                        count_down() returned
///   W <id> <seq> <wait_start> <end> <1|0>      wait_for() returned true (released) / false
///   E <id> <seq> <start> <end> <Error class>   a call threw
struct LatchWait {
  int worker = -1;
  long long start = 0;
  long long end = 0;
  bool released = false;
};

struct LatchHistory {
  std::vector<long long> begun;     // D times
  std::vector<long long> returned;  // C times
  std::vector<LatchWait> waits;
  std::map<std::string, int> errors;  // E lines by class
  std::vector<std::string> malformed;
};

LatchHistory parse_latch_history(const std::string& text);
LatchHistory read_latch_history(const std::string& path);

struct LatchExpectations {
  long long count = 0;          // C
  std::vector<int> awaiters;    // each must be released once
  long long wait_ns = 0;        // each wait_for() was given this
  long long hang_slack_ns = 0;  // a wait longer than wait + this counts as hung
};

struct LatchVerdict {
  int count_downs_begun = 0;
  int count_downs_returned = 0;
  int waits = 0;
  int released = 0;         // waits that returned true
  int early_releases = 0;   // released before the C-th count-down began
  int missed_openings = 0;  // timed out although the latch was open when the wait began
  int hung_waits = 0;
  std::vector<int> never_released;  // awaiters with no released wait
  double opened_after_ms = -1;      // from the C-th count-down's return to the first release
  double max_release_lag_ms = -1;   // from the C-th count-down's return to the latest first release
                                    // (negative: woken before that count_down() returned)
  std::map<std::string, int> errors;
  std::vector<std::string> problems;

  bool ok() const { return problems.empty(); }
  std::string summary(const std::string& label) const;
};

/// Pass criteria: no malformed lines; no wait returned true before the C-th count-down began
/// (the count cannot reach 0 earlier: every count-down that ran has its D line); no wait
/// that began after the C-th count-down returned (the latch was open) timed out; no wait
/// outlived its limit by more than the slack; every awaiter was released.
LatchVerdict check_latch(const LatchHistory& history, const LatchExpectations& expect);

}  // namespace redisync::chaos
