// SPDX-License-Identifier: Apache-2.0
// The fixture of the tests of the Metrics hook (redisync/metrics.h): a redis-server, and a
// hook that records what every Client configured by config() reports.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "redisync/config.h"
#include "support/recording_metrics.h"
#include "support/redis_server.h"
#include "support/test_config.h"

namespace redisync::test {

/// config_for(server) reporting to `metrics`.
inline Config config_for(const RedisServer& server,
                         const std::shared_ptr<RecordingMetrics>& metrics) {
  auto cfg = config_for(server);
  cfg.metrics = metrics;
  return cfg;
}

class MetricsHookTest : public ::testing::Test {
 protected:
  /// A Client configuration for `server` that reports to `metrics`.
  Config config() const { return config_for(server, metrics); }

  /// What a waiter woken by the holder's release reports under (kind, name): two acquires
  /// (holder, waiter), a wake-up, one handoff latency, and at least `waiter_attempts` attempts
  /// for the waiter's acquire (`why` says which).
  void expect_woken_handoff(const std::string& kind, const std::string& name,
                            double waiter_attempts, const std::string& why) {
    EXPECT_EQ(metrics->count(kind, name, Counter::acquires), 2u);
    EXPECT_GE(metrics->count(kind, name, Counter::wake_ups), 1u);
    EXPECT_EQ(metrics->values(kind, name, Histogram::handoff_latency).size(), 1u);
    const auto attempts = metrics->values(kind, name, Histogram::attempts_per_acquire);
    ASSERT_EQ(attempts.size(), 2u);
    EXPECT_GE(attempts[1], waiter_attempts) << why;
  }

  RedisServer server;
  std::shared_ptr<RecordingMetrics> metrics = std::make_shared<RecordingMetrics>();
};

}  // namespace redisync::test
