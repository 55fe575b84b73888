// SPDX-License-Identifier: Apache-2.0
// A real Redis Cluster for integration tests: 2N redis-server nodes (--cluster-enabled yes) on
// free loopback ports, joined with `redis-cli --cluster create --cluster-replicas 1`, N masters
// each with one replica. Plus the operations topology tests need: which master serves a slot,
// moving a slot between masters step by step (so a test can act while it is migrating), and
// waiting for a replica's promotion after its master was killed (failover).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "support/redis_server.h"

namespace redisync::test {

class RedisCluster {
 public:
  /// Starts 2 * `masters` nodes and creates the cluster; returns once every node reports
  /// cluster_state:ok, all agree on the slots and every master has its replica connected.
  /// Throws std::runtime_error (with redis-cli's output) on failure. `node_timeout` is each
  /// node's cluster-node-timeout: a killed master's replica is promoted a few of them later.
  explicit RedisCluster(int masters = 3,
                        std::chrono::milliseconds node_timeout = std::chrono::milliseconds(2000));
  ~RedisCluster();
  RedisCluster(const RedisCluster&) = delete;
  RedisCluster& operator=(const RedisCluster&) = delete;

  /// "redis-cluster://127.0.0.1:p1,127.0.0.1:p2,..." (every node is a seed).
  std::string url() const;
  std::size_t size() const { return nodes_.size(); }
  RedisServer& node(std::size_t i) { return *nodes_.at(i); }
  /// The node listening on `port`; throws std::out_of_range if none.
  RedisServer& node_on_port(std::uint16_t port);
  /// The cluster node id of node i (CLUSTER MYID).
  std::string node_id(std::size_t i);

  /// Indexes of the nodes that are masters now, by ROLE.
  std::vector<std::size_t> masters();
  /// The index of the master that serves `slot`, by CLUSTER SLOTS as node `ask` sees it (or
  /// the first running node if `ask` was killed).
  std::size_t master_of_slot(int slot, std::size_t ask = 0);
  /// The slot of `key` by the server (CLUSTER KEYSLOT), independent of the client's code.
  int key_slot(const std::string& key);

  /// Moves `slot` from master `from` to master `to`: marks it IMPORTING on `to` and MIGRATING
  /// on `from`, calls `while_migrating` (ASK redirects happen now), MIGRATEs its keys, then
  /// assigns it to `to` on every master (MOVED from now on). Bounded: throws
  /// std::runtime_error if a step fails.
  void move_slot(int slot, std::size_t from, std::size_t to,
                 const std::function<void()>& while_migrating = {});

  /// True once every running node reports cluster_state:ok and they agree on slot owners.
  bool healthy();

  /// The index of the running node that replicates master `master` (ROLE); throws
  /// std::runtime_error if it has none.
  std::size_t replica_of(std::size_t master);
  /// After master `old_owner` of `slot` was killed: waits (at most `limit`) until the cluster
  /// is healthy again and every running node names the same new owner of `slot`, and returns
  /// its index. Throws std::runtime_error if that does not happen in time.
  std::size_t wait_for_new_owner(int slot, std::size_t old_owner,
                                 std::chrono::milliseconds limit);

 private:
  RedisServer& live_node(std::size_t preferred);

  std::vector<std::unique_ptr<RedisServer>> nodes_;
};

}  // namespace redisync::test
