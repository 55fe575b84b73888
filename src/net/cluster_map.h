// SPDX-License-Identifier: Apache-2.0
// A Redis Cluster slot map as read from CLUSTER SHARDS (Redis 7+) or CLUSTER SLOTS (older):
// which master serves each slot, and how many replicas it has. Pure parsing, for unit tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "net/reply.h"

namespace redisync::net {

struct ClusterMaster {
  std::string host;
  std::uint16_t port = 0;
  int replicas = 0;  ///< replicas listed (CLUSTER SHARDS: only those reported online)
  std::string address() const { return host + ":" + std::to_string(port); }
};

struct SlotRange {
  int first = 0;
  int last = 0;     ///< inclusive
  std::size_t master = 0;  ///< index into SlotMap::masters
};

struct SlotMap {
  std::vector<ClusterMaster> masters;
  std::vector<SlotRange> ranges;
};

/// Parses a CLUSTER SHARDS reply. A node that reports no usable address ("" or "?") is taken
/// to live on `asked_host`, the host that answered. Throws ProtocolError on a malformed reply.
SlotMap parse_cluster_shards(const Reply& reply, const std::string& asked_host);
/// Parses a CLUSTER SLOTS reply, with the same rule for empty addresses.
SlotMap parse_cluster_slots(const Reply& reply, const std::string& asked_host);

/// Parses "MOVED 3999 127.0.0.1:6381" / "ASK 3999 host:port" error text. False if it is not
/// one of those (or is malformed).
bool parse_redirect(const std::string& error, bool& ask, int& slot, std::string& host,
                    std::uint16_t& port);

}  // namespace redisync::net
