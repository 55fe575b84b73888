// SPDX-License-Identifier: Apache-2.0
// A Metrics sink that keeps Prometheus metrics and can serve them over HTTP (/metrics).
//
// Part of the separate library redisync_prometheus (CMake option REDISYNC_PROMETHEUS, target
// redisync::redisync_prometheus), built on prometheus-cpp; the core library does not need it.
//
//   auto metrics = std::make_shared<redisync::PrometheusMetrics>();
//   metrics->serve("127.0.0.1:9464");           // GET http://127.0.0.1:9464/metrics
//   redisync::Config config = redisync::Config::from_url(url);
//   config.metrics = metrics;
//
// Exposed (label `kind`, and `name` with Options::per_name):
//   redisync_acquires_total, redisync_timeouts_total, redisync_wake_ups_total,
//   redisync_renewals_total, redisync_renewal_failures_total, redisync_lost_locks_total,
//   redisync_subscriptions_total (counters);
//   redisync_acquire_wait_seconds, redisync_hold_time_seconds, redisync_handoff_latency_seconds,
//   redisync_attempts_per_acquire (histograms).
#pragma once

#include <memory>
#include <string>

#include "redisync/export.h"
#include "redisync/metrics.h"

namespace redisync {

class REDISYNC_API PrometheusMetrics : public Metrics {
 public:
  struct Options {
    /// Label series with the lock's name too. Off by default: names can be unbounded (one
    /// series per name and kind), which Prometheus handles badly.
    bool per_name = false;
  };

  PrometheusMetrics();
  explicit PrometheusMetrics(Options options);
  ~PrometheusMetrics() override;
  PrometheusMetrics(const PrometheusMetrics&) = delete;
  PrometheusMetrics& operator=(const PrometheusMetrics&) = delete;

  void increment(const MetricLabels& labels, Counter counter, std::uint64_t n) noexcept override;
  void observe(const MetricLabels& labels, Histogram histogram, double value) noexcept override;

  /// Starts an HTTP server answering GET /metrics on `address` ("127.0.0.1:9464"; port 0
  /// picks a free one) until this object is destroyed. Returns the port it listens on.
  /// Throws ConfigError if it cannot listen there. At most one server per object.
  int serve(const std::string& address);

  /// The current metrics in Prometheus' text exposition format.
  std::string text() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace redisync
