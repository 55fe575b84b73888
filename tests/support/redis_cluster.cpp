// SPDX-License-Identifier: Apache-2.0
#include "support/redis_cluster.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

#include "support/server_stats.h"
#include "support/test_util.h"

namespace redisync::test {

namespace {

using namespace std::chrono_literals;

// A free loopback port for a node's cluster bus (the default, port + 10000, may not exist:
// ephemeral ports go up to 60999 here).
std::uint16_t free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error("reserving a loopback port failed");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

std::unique_ptr<RedisServer> start_node(std::chrono::milliseconds node_timeout) {
  for (int attempt = 1;; ++attempt) {
    try {
      return std::make_unique<RedisServer>(ServerOptions{
          .extra_args = {"--cluster-enabled", "yes", "--cluster-port",
                         std::to_string(free_port()), "--cluster-node-timeout",
                         std::to_string(node_timeout.count()),
                         "--cluster-require-full-coverage", "no"}});
    } catch (const std::exception&) {
      if (attempt == 3) throw;  // the bus port was taken meanwhile: pick another
    }
  }
}


}  // namespace

RedisCluster::RedisCluster(int masters, std::chrono::milliseconds node_timeout) {
  for (int i = 0; i < 2 * masters; ++i) nodes_.push_back(start_node(node_timeout));
  std::vector<std::string> argv{"redis-cli", "--cluster", "create"};
  for (auto& n : nodes_) argv.push_back("127.0.0.1:" + std::to_string(n->port()));
  argv.insert(argv.end(), {"--cluster-replicas", "1", "--cluster-yes"});
  const auto result = run_process(argv, 60s);
  if (result.exit_code != 0 || result.timed_out) {
    throw std::runtime_error("redis-cli --cluster create failed (exit " +
                             std::to_string(result.exit_code) + "): " + result.output);
  }
  const bool ready = wait_until(
      [&] {
        if (!healthy()) return false;
        for (auto i : this->masters()) {
          if (info_field(*nodes_[i], "replication", "connected_slaves") != "1") return false;
        }
        return this->masters().size() == static_cast<std::size_t>(masters);
      },
      30s, 100ms);
  if (!ready) {
    std::string state;
    for (auto& n : nodes_) {
      try {
        state += " " + std::to_string(n->port()) + ": " +
                 info_field(*n, "cluster", "cluster_state") + ", role " +
                 n->command({"ROLE"}).elements.at(0).str + ", replicas " +
                 info_field(*n, "replication", "connected_slaves") + ";";
      } catch (const std::exception& e) {
        state += " " + std::to_string(n->port()) + ": " + e.what() + ";";
      }
    }
    throw std::runtime_error("redis cluster did not become healthy within 30 s:" + state);
  }
}

RedisCluster::~RedisCluster() = default;

std::string RedisCluster::url() const {
  std::string u = "redis-cluster://";
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (i) u += ",";
    u += "127.0.0.1:" + std::to_string(nodes_[i]->port());
  }
  return u;
}

RedisServer& RedisCluster::node_on_port(std::uint16_t port) {
  for (auto& n : nodes_) {
    if (n->port() == port) return *n;
  }
  throw std::out_of_range("no cluster node on port " + std::to_string(port));
}

std::string RedisCluster::node_id(std::size_t i) {
  return nodes_.at(i)->command({"CLUSTER", "MYID"}).as_string();
}

std::vector<std::size_t> RedisCluster::masters() {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (!nodes_[i]->running()) continue;
    try {
      auto role = nodes_[i]->command({"ROLE"});
      if (!role.elements.empty() && role.elements[0].str == "master") out.push_back(i);
    } catch (const std::exception&) {
    }
  }
  return out;
}

RedisServer& RedisCluster::live_node(std::size_t preferred) {
  if (nodes_.at(preferred)->running()) return *nodes_[preferred];
  for (auto& n : nodes_) {
    if (n->running()) return *n;
  }
  throw std::runtime_error("no cluster node is running");
}

std::size_t RedisCluster::master_of_slot(int slot, std::size_t ask) {
  auto slots = live_node(ask).command({"CLUSTER", "SLOTS"});
  for (const auto& range : slots.elements) {
    if (range.elements.size() < 3) continue;
    if (slot >= range.elements[0].integer && slot <= range.elements[1].integer) {
      const auto port = static_cast<std::uint16_t>(range.elements[2].elements.at(1).integer);
      for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (nodes_[i]->port() == port) return i;
      }
    }
  }
  throw std::runtime_error("no master serves slot " + std::to_string(slot));
}

int RedisCluster::key_slot(const std::string& key) {
  return static_cast<int>(live_node(0).command({"CLUSTER", "KEYSLOT", key}).as_integer());
}

bool RedisCluster::healthy() {
  std::string slots_view;
  for (auto& n : nodes_) {
    if (!n->running()) continue;
    try {
      if (info_field(*n, "cluster", "cluster_state") != "ok") return false;
      // Every node must see the same owners (ports) for the same ranges.
      std::string view;
      for (const auto& r : n->command({"CLUSTER", "SLOTS"}).elements) {
        view += std::to_string(r.elements.at(0).integer) + "-" +
                std::to_string(r.elements.at(1).integer) + "@" +
                std::to_string(r.elements.at(2).elements.at(1).integer) + ";";
      }
      std::vector<std::string> parts;  // order of ranges may differ between nodes
      std::size_t start = 0;
      for (std::size_t p = view.find(';'); p != std::string::npos; p = view.find(';', start)) {
        parts.push_back(view.substr(start, p - start));
        start = p + 1;
      }
      std::sort(parts.begin(), parts.end());
      std::string sorted;
      for (auto& p : parts) sorted += p + ";";
      if (slots_view.empty()) {
        slots_view = sorted;
      } else if (sorted != slots_view) {
        return false;
      }
    } catch (const std::exception&) {
      return false;
    }
  }
  return !slots_view.empty();
}

std::size_t RedisCluster::replica_of(std::size_t master) {
  const auto port = static_cast<long long>(nodes_.at(master)->port());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (i == master || !nodes_[i]->running()) continue;
    try {
      // A replica's ROLE: ["slave", master host, master port, state, offset].
      auto role = nodes_[i]->command({"ROLE"});
      if (role.elements.size() >= 3 && role.elements[0].str == "slave" &&
          role.elements[2].integer == port) {
        return i;
      }
    } catch (const std::exception&) {
    }
  }
  throw std::runtime_error("master on port " + std::to_string(port) + " has no replica");
}

std::size_t RedisCluster::wait_for_new_owner(int slot, std::size_t old_owner,
                                             std::chrono::milliseconds limit) {
  std::size_t owner = old_owner;
  const bool done = wait_until(
      [&] {
        if (!healthy()) return false;  // every running node: state ok, same slot owners
        for (std::size_t i = 0; i < nodes_.size(); ++i) {
          if (!nodes_[i]->running()) continue;
          try {
            owner = master_of_slot(slot, i);
          } catch (const std::exception&) {
            return false;
          }
          return owner != old_owner;
        }
        return false;
      },
      limit, 50ms);
  if (!done) {
    throw std::runtime_error("slot " + std::to_string(slot) + " got no new owner within " +
                             std::to_string(limit.count()) + " ms");
  }
  return owner;
}

void RedisCluster::move_slot(int slot, std::size_t from, std::size_t to,
                             const std::function<void()>& while_migrating) {
  const std::string s = std::to_string(slot);
  const std::string from_id = node_id(from);
  const std::string to_id = node_id(to);
  auto check = [](const Reply& r, const std::string& what) {
    if (r.is_error()) throw std::runtime_error(what + ": " + r.str);
  };
  check(nodes_[to]->command({"CLUSTER", "SETSLOT", s, "IMPORTING", from_id}), "SETSLOT IMPORTING");
  check(nodes_[from]->command({"CLUSTER", "SETSLOT", s, "MIGRATING", to_id}), "SETSLOT MIGRATING");
  if (while_migrating) while_migrating();
  for (int round = 0; round < 1000; ++round) {
    auto keys = nodes_[from]->command({"CLUSTER", "GETKEYSINSLOT", s, "100"});
    if (keys.elements.empty()) break;
    std::vector<std::string> migrate{"MIGRATE", "127.0.0.1", std::to_string(nodes_[to]->port()),
                                     "", "0", "5000", "KEYS"};
    for (const auto& k : keys.elements) migrate.push_back(k.str);
    check(nodes_[from]->command(migrate), "MIGRATE");
  }
  // The new owner first, then the old one, then the other masters (as redis-cli does).
  check(nodes_[to]->command({"CLUSTER", "SETSLOT", s, "NODE", to_id}), "SETSLOT NODE (target)");
  check(nodes_[from]->command({"CLUSTER", "SETSLOT", s, "NODE", to_id}), "SETSLOT NODE (source)");
  for (auto m : masters()) {
    if (m != from && m != to) nodes_[m]->command({"CLUSTER", "SETSLOT", s, "NODE", to_id});
  }
}

}  // namespace redisync::test
