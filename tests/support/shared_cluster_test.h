// SPDX-License-Identifier: Apache-2.0
// The gtest fixture base of the cluster suites (cluster_test.cpp, cluster_failover_test.cpp): one
// RedisCluster per suite, started before its first test, and a client config for it; and what
// both suites ask the nodes about a lock's channel.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <exception>
#include <string>

#include "redisync/config.h"
#include "support/redis_cluster.h"
#include "support/redis_server.h"
#include "support/test_util.h"

namespace redisync::test {

/// Sharded subscribers of `channel` on `node` (PUBSUB SHARDNUMSUB); -1 on an odd reply.
inline long long shard_subscribers(RedisServer& node, const std::string& channel) {
  auto r = node.command({"PUBSUB", "SHARDNUMSUB", channel});
  return r.elements.size() == 2 ? r.elements[1].as_integer() : -1;
}

/// The channel a lock `name`'s waiters are woken on (its hash tag keeps it in the lock's slot).
inline std::string lock_channel(const std::string& name) {
  return "redisson_lock__channel:{" + name + "}";
}

/// Fixture base: the suite `Suite` (the deriving fixture, so each suite has its own cluster)
/// shares one RedisCluster of 3 masters with one replica each, `NodeTimeoutMs` its
/// cluster-node-timeout. Each test starts once the cluster is healthy (at most 20 s).
template <class Suite, int NodeTimeoutMs = 2000>
class SharedClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    try {
      cluster_ = new RedisCluster(3, std::chrono::milliseconds(NodeTimeoutMs));
    } catch (const std::exception& e) {
      setup_error_ = e.what();
    }
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    using namespace std::chrono_literals;
    ASSERT_NE(cluster_, nullptr) << setup_error_;
    ASSERT_TRUE(wait_until([] { return cluster_->healthy(); }, 20s, 100ms));
  }

  /// A client config for the cluster: short subscription linger, fast reconnects.
  static redisync::Config config() {
    using namespace std::chrono_literals;
    auto cfg = redisync::Config::from_url(cluster_->url());
    cfg.subscription_linger = 500ms;
    cfg.reconnection_delay_min = 20ms;
    cfg.reconnection_delay_max = 200ms;
    return cfg;
  }

  inline static RedisCluster* cluster_ = nullptr;
  inline static std::string setup_error_;
};

}  // namespace redisync::test
