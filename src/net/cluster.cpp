// SPDX-License-Identifier: Apache-2.0
#include "net/cluster.h"

#include <algorithm>
#include <set>

#include "net/cluster_slot.h"
#include "net/executor.h"  // connection_options
#include "net/server_text.h"
#include "redisync/errors.h"

namespace redisync::net {

namespace {

constexpr auto kMinRefreshInterval = std::chrono::milliseconds(100);
constexpr auto kScanInterval = std::chrono::milliseconds(5000);  // Redisson: scanInterval
// While a master of the map cannot be reached: its replica may be promoted any moment, and
// the callers' next tries (a watchdog's next renewal is a third of a lease away) must find it.
// A refresh prompted by their failures may have come before the promotion and read the old map.
constexpr auto kScanWhileAMasterIsDown = std::chrono::milliseconds(500);

// Our command connection to the node is up / was made and is down now.
bool connected(const ClusterNode& node) { return node.commands && node.commands->ready(); }
bool lost(const ClusterNode& node) { return node.commands && !node.commands->ready(); }

std::string error_text(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

// One pass over candidate nodes, asking each for the map until one answers.
struct ClusterRouter::RefreshRun {
  std::vector<std::pair<std::string, std::uint16_t>> candidates;
  std::size_t next = 0;
  std::string errors;
};

ClusterRouter::ClusterRouter(asio::io_context& io, const Config& config,
                             asio::ssl::context* tls)
    : io_(io),
      config_(config),
      tls_(tls),
      slots_(kClusterSlots),
      refresh_timer_(io),
      scan_timer_(io) {}

ClusterRouter::~ClusterRouter() { close(); }

ConnectionOptions ClusterRouter::node_options(const std::string& host, std::uint16_t port,
                                              bool pubsub) const {
  // A cluster config has no unix socket and database 0 (Config::validate): the options of a
  // single server's connection, at the node's address.
  ConnectionOptions o = connection_options(config_, pubsub);
  o.host = host;
  o.port = port;
  return o;
}

void ClusterRouter::close() {
  if (closed_) return;
  closed_ = true;
  refresh_timer_.cancel();
  scan_timer_.cancel();
  for (auto& [address, node] : nodes_) {
    if (node->replica_timer) node->replica_timer->cancel();
    if (node->commands) node->commands->close();
  }
  auto waiters = std::move(refresh_waiters_);
  refresh_waiters_.clear();
  for (auto& w : waiters) w(std::make_exception_ptr(ClientClosedError("client closed")));
}

std::size_t ClusterRouter::in_flight() const {
  std::size_t n = 0;
  each_command_connection([&](const Connection& c) { n += c.in_flight(); });
  return n;
}

Duration ClusterRouter::reply_lag(Clock::time_point now) const {
  Duration lag{0};
  each_command_connection([&](const Connection& c) { lag = std::max(lag, c.reply_lag(now)); });
  return lag;
}

std::vector<std::string> ClusterRouter::master_addresses() const {
  std::vector<std::string> out;
  for (const auto& m : masters_) out.push_back(m->address());
  return out;
}

int ClusterRouter::max_replicas() const {
  int most = 0;
  for (const auto& m : masters_) most = std::max(most, m->replicas);
  return most;
}

std::shared_ptr<ClusterNode> ClusterRouter::node_at(const std::string& host,
                                                    std::uint16_t port) {
  const std::string address = host + ":" + std::to_string(port);
  auto& node = nodes_[address];
  if (!node) {
    node = std::make_shared<ClusterNode>();
    node->host = host;
    node->port = port;
  }
  return node;
}

Connection& ClusterRouter::commands(ClusterNode& node) {
  if (!node.commands) {
    node.commands = Connection::create(io_, node_options(node.host, node.port, false), tls_);
    std::weak_ptr<ClusterNode> weak = nodes_[node.address()];
    node.commands->set_state_handler([this, weak](bool up) {
      if (closed_) return;
      auto n = weak.lock();
      if (!n) return;
      if (up) {
        refresh_replicas(n);
      } else {
        // The node went away: a failover may have moved its slots.
        request_refresh();
      }
    });
  }
  return *node.commands;
}

void ClusterRouter::refresh_replicas(const std::shared_ptr<ClusterNode>& node) {
  if (closed_ || !config_.check_lock_synced_slaves || !node->commands) return;
  std::weak_ptr<ClusterNode> weak = node;
  node->commands->execute({"INFO", "replication"}, [this, weak](std::exception_ptr error,
                                                                Reply reply) {
    auto n = weak.lock();
    if (closed_ || !n) return;
    if (!error && reply.is_string()) {
      // A malformed count keeps the last one read.
      if (const auto count = parse_connected_replicas(reply.str)) n->replicas = *count;
    }
    // Replicas come and go; keep the count fresh while the connection is up.
    if (!n->replica_timer) n->replica_timer = std::make_unique<asio::steady_timer>(io_);
    n->replica_timer->expires_after(std::chrono::seconds(1));
    n->replica_timer->async_wait([this, weak](std::error_code ec) {
      auto n2 = weak.lock();
      if (!ec && !closed_ && n2 && n2->commands && n2->commands->ready()) refresh_replicas(n2);
    });
  });
}

std::shared_ptr<ClusterNode> ClusterRouter::node_for_slot(int slot) {
  if (slot >= 0 && slot < kClusterSlots && slots_[static_cast<std::size_t>(slot)]) {
    return slots_[static_cast<std::size_t>(slot)];
  }
  if (masters_.empty()) return nullptr;
  return masters_[static_cast<std::size_t>(slot) % masters_.size()];
}

void ClusterRouter::set_slot_owner(int slot, const std::string& host, std::uint16_t port) {
  if (slot < 0 || slot >= kClusterSlots) return;
  auto node = node_at(host, port);
  slots_[static_cast<std::size_t>(slot)] = node;
  if (std::find(masters_.begin(), masters_.end(), node) == masters_.end()) {
    masters_.push_back(node);
  }
}

void ClusterRouter::request_refresh() {
  if (closed_ || refresh_scheduled_) return;
  if (refreshing_) {
    // The answer in flight may predate what prompted this request: ask once more after it.
    refresh_again_ = true;
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  const auto due = last_refresh_ + kMinRefreshInterval;
  if (now >= due) return refresh([](std::exception_ptr) {});
  refresh_scheduled_ = true;
  refresh_timer_.expires_at(due);
  refresh_timer_.async_wait([this](std::error_code ec) {
    if (ec || closed_) return;
    refresh_scheduled_ = false;
    refresh([](std::exception_ptr) {});
  });
}

void ClusterRouter::refresh(std::function<void(std::exception_ptr)> done) {
  if (closed_) return done(std::make_exception_ptr(ClientClosedError("client closed")));
  refresh_waiters_.push_back(std::move(done));
  if (refreshing_) return;
  refreshing_ = true;
  auto run = std::make_shared<RefreshRun>();
  std::set<std::string> seen;
  auto add = [&](const std::string& host, std::uint16_t port) {
    if (seen.insert(host + ":" + std::to_string(port)).second) {
      run->candidates.emplace_back(host, port);
    }
  };
  // Masters we are connected to first: a dead or cut-off one would hold the question up
  // (up to a connect timeout) in the very failover that prompted it.
  for (const auto& m : masters_) {
    if (connected(*m)) add(m->host, m->port);
  }
  for (const auto& m : masters_) add(m->host, m->port);
  for (const auto& s : config_.seeds) add(s.host, s.port);
  ask_next(std::move(run));
}

void ClusterRouter::ask_next(std::shared_ptr<RefreshRun> run) {
  if (closed_) return;
  if (run->next >= run->candidates.size()) {
    return finish_refresh(std::make_exception_ptr(ConnectionError(
        "redis cluster: no node answered CLUSTER SHARDS / CLUSTER SLOTS:" + run->errors)));
  }
  const auto [host, port] = run->candidates[run->next++];
  auto options = node_options(host, port, false);
  // A short-lived connection per question: a dead node must not hold the refresh for the
  // whole connect timeout.
  options.connect_timeout = std::min(config_.connect_timeout, config_.timeout);
  options.reconnect_min = options.reconnect_max = std::chrono::hours(1);
  auto conn = Connection::create(io_, options, tls_);
  auto fail = [this, run, host, port, conn](const std::string& why) {
    conn->close();
    run->errors += " " + host + ":" + std::to_string(port) + ": " + why + ";";
    ask_next(run);
  };
  auto parse = [this, run, host, conn, fail](Reply reply, bool shards) {
    try {
      const SlotMap map =
          shards ? parse_cluster_shards(reply, host) : parse_cluster_slots(reply, host);
      if (map.ranges.empty()) return fail("no slots assigned");
      conn->close();
      apply(map);
      finish_refresh(nullptr);
    } catch (const std::exception& e) {
      fail(e.what());
    }
  };
  if (!pubsub_probed_) {
    // Spec §1.5: sharded pub/sub when the nodes answer PUBSUB SHARDNUMSUB (Redis 7+).
    conn->execute({"PUBSUB", "SHARDNUMSUB"}, [this](std::exception_ptr error, Reply reply) {
      if (error || pubsub_probed_) return;
      pubsub_probed_ = true;
      sharded_ = !reply.is_error();
    });
  }
  conn->execute({"CLUSTER", "SHARDS"}, [this, conn, fail, parse](std::exception_ptr error,
                                                                 Reply reply) {
    if (closed_) return conn->close();
    if (error) return fail(error_text(error));
    if (!reply.is_error()) return parse(std::move(reply), true);
    if (reply.str.find("unknown subcommand") == std::string::npos &&
        reply.str.find("Unknown subcommand") == std::string::npos) {
      return fail(reply.str);  // e.g. "cluster support disabled"
    }
    conn->execute({"CLUSTER", "SLOTS"}, [this, conn, fail, parse](std::exception_ptr e2,
                                                                  Reply r2) {
      if (closed_) return conn->close();
      if (e2) return fail(error_text(e2));
      if (r2.is_error()) return fail(r2.str);
      parse(std::move(r2), false);
    });
  });
}

void ClusterRouter::apply(const SlotMap& map) {
  std::vector<std::shared_ptr<ClusterNode>> slots(kClusterSlots);
  std::vector<std::shared_ptr<ClusterNode>> masters;
  for (const auto& m : map.masters) {
    auto node = node_at(m.host, m.port);
    if (!node->commands || !node->commands->ready()) node->replicas = m.replicas;
    masters.push_back(node);
  }
  for (const auto& r : map.ranges) {
    for (int s = r.first; s <= r.last; ++s) slots[static_cast<std::size_t>(s)] = masters[r.master];
  }
  slots_ = std::move(slots);
  masters_ = std::move(masters);
  loaded_ = true;
  ++refreshes_;
}

void ClusterRouter::finish_refresh(std::exception_ptr error) {
  refreshing_ = false;
  last_refresh_ = std::chrono::steady_clock::now();
  auto waiters = std::move(refresh_waiters_);
  refresh_waiters_.clear();
  if (!error && map_changed_) map_changed_();
  for (auto& w : waiters) w(error);
  schedule_scan();
  if (refresh_again_) {
    refresh_again_ = false;
    request_refresh();
  }
}

void ClusterRouter::schedule_scan() {
  if (closed_ || !loaded_) return;
  const bool master_down =
      std::any_of(masters_.begin(), masters_.end(), [](const auto& m) { return lost(*m); });
  scan_timer_.expires_after(master_down ? kScanWhileAMasterIsDown : kScanInterval);
  scan_timer_.async_wait([this](std::error_code ec) {
    if (ec || closed_) return;
    request_refresh();
  });
}

}  // namespace redisync::net
