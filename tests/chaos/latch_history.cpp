// SPDX-License-Identifier: Apache-2.0
#include "chaos/latch_history.h"

#include <algorithm>
#include <limits>
#include <set>
#include <sstream>

#include "chaos/history.h"  // file_text, counts_text

namespace redisync::chaos {

namespace {

constexpr long long kNever = std::numeric_limits<long long>::max();

double ms(long long ns) { return static_cast<double>(ns) / 1e6; }

// The C-th smallest of `times` (kNever if there are fewer).
long long nth(std::vector<long long> times, long long count) {
  if (count <= 0) return 0;
  if (static_cast<long long>(times.size()) < count) return kNever;
  std::sort(times.begin(), times.end());
  return times[static_cast<std::size_t>(count - 1)];
}

}  // namespace

LatchHistory parse_latch_history(const std::string& text) {
  LatchHistory h;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    std::istringstream in(line);
    char tag = 0;
    int worker = -1;
    long long seq = 0;
    in >> tag >> worker >> seq;
    bool good = false;
    if (tag == 'D' || tag == 'C') {
      long long time = 0;
      in >> time;
      good = static_cast<bool>(in);
      if (good) (tag == 'D' ? h.begun : h.returned).push_back(time);
    } else if (tag == 'W') {
      LatchWait w;
      w.worker = worker;
      int released = -1;
      in >> w.start >> w.end >> released;
      good = static_cast<bool>(in) && (released == 0 || released == 1);
      w.released = released == 1;
      if (good) h.waits.push_back(w);
    } else if (tag == 'E') {
      long long start = 0;
      long long end = 0;
      std::string what;
      in >> start >> end >> what;
      good = static_cast<bool>(in);
      if (good) ++h.errors[what];
    }
    if (!good) h.malformed.push_back(line);
  }
  return h;
}

LatchHistory read_latch_history(const std::string& path) {
  return parse_latch_history(file_text(path));
}

LatchVerdict check_latch(const LatchHistory& history, const LatchExpectations& expect) {
  LatchVerdict v;
  for (const auto& line : history.malformed) v.problems.push_back("malformed line: " + line);
  v.errors = history.errors;
  v.count_downs_begun = static_cast<int>(history.begun.size());
  v.count_downs_returned = static_cast<int>(history.returned.size());
  // The count reached 0 no earlier than the C-th count-down began, and no later than the
  // C-th returned.
  const long long open_from = nth(history.begun, expect.count);
  const long long open_by = nth(history.returned, expect.count);
  std::map<int, long long> first_release;
  for (const auto& w : history.waits) {
    ++v.waits;
    if (w.end - w.start > expect.wait_ns + expect.hang_slack_ns) ++v.hung_waits;
    if (w.released) {
      ++v.released;
      auto [it, fresh] = first_release.emplace(w.worker, w.end);
      if (!fresh) it->second = std::min(it->second, w.end);
      if (w.end < open_from) {
        ++v.early_releases;
        if (v.early_releases <= 5) {
          v.problems.push_back(
              "worker " + std::to_string(w.worker) + " was released with " +
              std::to_string(std::count_if(history.begun.begin(), history.begun.end(),
                                           [&](long long t) { return t <= w.end; })) +
              " count-downs begun of " + std::to_string(expect.count));
        }
      }
    } else if (w.start >= open_by) {
      ++v.missed_openings;
      if (v.missed_openings <= 5) {
        v.problems.push_back("worker " + std::to_string(w.worker) +
                             " timed out on a latch that was open " +
                             std::to_string(ms(w.start - open_by)) + " ms before its wait began");
      }
    }
  }
  if (v.hung_waits > 0) {
    v.problems.push_back(std::to_string(v.hung_waits) +
                         " waits outlived their limit by more than the slack");
  }
  for (const int a : expect.awaiters) {
    auto it = first_release.find(a);
    if (it == first_release.end()) {
      v.never_released.push_back(a);
      v.problems.push_back("awaiter " + std::to_string(a) + " was never released");
      continue;
    }
    if (open_by != kNever) {
      const double lag = ms(it->second - open_by);
      v.max_release_lag_ms = std::max(v.max_release_lag_ms, lag);
      v.opened_after_ms = v.opened_after_ms < 0 ? lag : std::min(v.opened_after_ms, lag);
    }
  }
  return v;
}

std::string LatchVerdict::summary(const std::string& label) const {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << "chaos " << label << ": count_downs_begun=" << count_downs_begun
      << " count_downs_returned=" << count_downs_returned << " waits=" << waits
      << " released=" << released << " early_releases=" << early_releases
      << " missed_openings=" << missed_openings << " hung_waits=" << hung_waits
      << " never_released=" << never_released.size() << " errors=" << counts_text(errors)
      << " first_release_after_open_ms=" << opened_after_ms
      << " last_release_after_open_ms=" << max_release_lag_ms;
  return out.str();
}

}  // namespace redisync::chaos
