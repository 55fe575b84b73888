// SPDX-License-Identifier: Apache-2.0
// Cluster topology: the slot map (CLUSTER SHARDS, falling back to CLUSTER SLOTS), one lazily
// created command connection per master, the replica count of each master (INFO replication,
// for WAIT), and rate-limited map refreshes after MOVED or a lost node.
//
// Threading: io thread only.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/ssl/context.hpp>
#include <asio/steady_timer.hpp>

#include "net/cluster_map.h"
#include "net/connection.h"
#include "redisync/config.h"

namespace redisync::net {

/// One cluster node we talk to (a master, or an ASK/MOVED target).
struct ClusterNode {
  std::string host;
  std::uint16_t port = 0;
  std::shared_ptr<Connection> commands;  ///< created on first use
  std::shared_ptr<Connection> pubsub;    ///< created by the subscriber's route on first use
  int replicas = 0;                      ///< connected replicas (INFO replication)
  std::unique_ptr<asio::steady_timer> replica_timer;
  std::string address() const { return host + ":" + std::to_string(port); }
};

class ClusterRouter {
 public:
  ClusterRouter(asio::io_context& io, const Config& config, asio::ssl::context* tls);
  ~ClusterRouter();
  ClusterRouter(const ClusterRouter&) = delete;
  ClusterRouter& operator=(const ClusterRouter&) = delete;

  /// Loads the slot map now (known masters first, then the seeds); `done(error)` gets a
  /// ConnectionError naming every node tried when none answered. The first successful load
  /// also detects sharded pub/sub (docs/wire-format.md §1.5: a node that answers PUBSUB SHARDNUMSUB).
  void refresh(std::function<void(std::exception_ptr)> done);
  /// Schedules a refresh, at most one per `min_refresh_interval` (MOVED, lost node).
  void request_refresh();
  /// Called after every successful map load (the subscriber re-routes its channels).
  void on_map_change(std::function<void()> handler) { map_changed_ = std::move(handler); }

  /// The master serving `slot`, or any known master when the slot is unassigned (it will
  /// answer with a redirect); nullptr before the first map load.
  std::shared_ptr<ClusterNode> node_for_slot(int slot);
  /// The node at host:port (created if new); its command connection exists.
  std::shared_ptr<ClusterNode> node_at(const std::string& host, std::uint16_t port);
  /// MOVED: `slot` is now served by host:port.
  void set_slot_owner(int slot, const std::string& host, std::uint16_t port);
  /// The node's command connection, created on first use.
  Connection& commands(ClusterNode& node);

  bool loaded() const { return loaded_; }
  bool sharded_pubsub() const { return sharded_; }
  /// Masters in the current map (for tests and diagnostics).
  std::vector<std::string> master_addresses() const;
  /// The largest count of connected replicas among the masters (INFO replication).
  int max_replicas() const;
  /// Requests awaiting replies on the nodes' command connections.
  std::size_t in_flight() const;
  /// The longest Connection::reply_lag of the command connections.
  Duration reply_lag(Clock::time_point now) const;
  /// Full map loads done so far.
  std::uint64_t refreshes() const { return refreshes_; }
  /// Connection options for a node (pub/sub or commands), from the Config.
  ConnectionOptions node_options(const std::string& host, std::uint16_t port, bool pubsub) const;
  asio::ssl::context* tls() const { return tls_; }
  void close();

 private:
  struct RefreshRun;
  void ask_next(std::shared_ptr<RefreshRun> run);
  void apply(const SlotMap& map);
  void finish_refresh(std::exception_ptr error);
  void refresh_replicas(const std::shared_ptr<ClusterNode>& node);
  void schedule_scan();
  /// Calls `f` with each node's command connection (a node not used yet has none).
  template <class F>
  void each_command_connection(F&& f) const {
    for (const auto& [address, node] : nodes_) {
      if (node->commands) f(*node->commands);
    }
  }

  asio::io_context& io_;
  Config config_;
  asio::ssl::context* tls_;
  std::map<std::string, std::shared_ptr<ClusterNode>> nodes_;  // by "host:port"
  std::vector<std::shared_ptr<ClusterNode>> slots_;            // kClusterSlots entries
  std::vector<std::shared_ptr<ClusterNode>> masters_;
  bool loaded_ = false;
  bool sharded_ = false;
  bool pubsub_probed_ = false;
  bool refreshing_ = false;
  bool refresh_again_ = false;
  bool closed_ = false;
  std::vector<std::function<void(std::exception_ptr)>> refresh_waiters_;
  std::chrono::steady_clock::time_point last_refresh_{};
  asio::steady_timer refresh_timer_;  // a requested refresh waiting for the rate limit
  bool refresh_scheduled_ = false;
  asio::steady_timer scan_timer_;  // periodic refresh (Redisson: scanInterval)
  std::uint64_t refreshes_ = 0;
  std::function<void()> map_changed_;
};

}  // namespace redisync::net
