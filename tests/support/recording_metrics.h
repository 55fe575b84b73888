// SPDX-License-Identifier: Apache-2.0
// A Metrics hook for tests: records every event, per (kind, name, counter/histogram).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "redisync/metrics.h"

namespace redisync::test {

// Records every event; thread-safe (calls come from the I/O thread and callers' threads).
class RecordingMetrics : public redisync::Metrics {
 public:
  void increment(const redisync::MetricLabels& l, redisync::Counter c,
                 std::uint64_t n) noexcept override {
    std::lock_guard guard(mutex_);
    counters_[{std::string(l.kind), std::string(l.name), c}] += n;
  }
  void observe(const redisync::MetricLabels& l, redisync::Histogram h,
               double value) noexcept override {
    std::lock_guard guard(mutex_);
    observations_[{std::string(l.kind), std::string(l.name), h}].push_back(value);
  }
  std::uint64_t count(const std::string& kind, const std::string& name, redisync::Counter c) {
    std::lock_guard guard(mutex_);
    auto it = counters_.find({kind, name, c});
    return it == counters_.end() ? 0 : it->second;
  }
  /// Summed over names.
  std::uint64_t count(const std::string& kind, redisync::Counter c) {
    std::lock_guard guard(mutex_);
    std::uint64_t n = 0;
    for (const auto& [key, value] : counters_) {
      if (std::get<0>(key) == kind && std::get<2>(key) == c) n += value;
    }
    return n;
  }
  std::vector<double> values(const std::string& kind, const std::string& name,
                             redisync::Histogram h) {
    std::lock_guard guard(mutex_);
    auto it = observations_.find({kind, name, h});
    return it == observations_.end() ? std::vector<double>{} : it->second;
  }

 private:
  std::mutex mutex_;
  std::map<std::tuple<std::string, std::string, redisync::Counter>, std::uint64_t> counters_;
  std::map<std::tuple<std::string, std::string, redisync::Histogram>, std::vector<double>>
      observations_;
};

}  // namespace redisync::test
