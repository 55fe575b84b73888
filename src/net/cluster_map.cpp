// SPDX-License-Identifier: Apache-2.0
#include "net/cluster_map.h"

#include <charconv>
#include <map>

#include "net/server_text.h"
#include "redisync/errors.h"

namespace redisync::net {

namespace {

[[noreturn]] void malformed(const std::string& what, const Reply& reply) {
  throw ProtocolError("redis cluster: malformed " + what + " reply: " + reply.to_string());
}

// Looks up `field` in a flat [name, value, name, value ...] array.
const Reply* field_of(const Reply& map, const std::string& field) {
  if (!map.is_array()) return nullptr;
  for (std::size_t i = 0; i + 1 < map.elements.size(); i += 2) {
    if (map.elements[i].str == field) return &map.elements[i + 1];
  }
  return nullptr;
}

long long as_number(const Reply& r) {
  if (r.is_integer()) return r.integer;
  long long v = -1;
  return parse_decimal(r.str, v) ? v : -1;
}

std::string usable_host(const std::string& host, const std::string& asked_host) {
  return host.empty() || host == "?" ? asked_host : host;
}

// Adds (or finds) a master by address.
std::size_t master_index(SlotMap& map, std::map<std::string, std::size_t>& index,
                         ClusterMaster m) {
  const auto address = m.address();
  auto it = index.find(address);
  if (it != index.end()) return it->second;
  map.masters.push_back(std::move(m));
  return index.emplace(address, map.masters.size() - 1).first->second;
}

bool valid_range(long long first, long long last) {
  return first >= 0 && last >= first && last < 16384;
}

}  // namespace

SlotMap parse_cluster_shards(const Reply& reply, const std::string& asked_host) {
  if (!reply.is_array()) malformed("CLUSTER SHARDS", reply);
  SlotMap map;
  std::map<std::string, std::size_t> index;
  for (const auto& shard : reply.elements) {
    const Reply* slots = field_of(shard, "slots");
    const Reply* nodes = field_of(shard, "nodes");
    if (!slots || !nodes || !slots->is_array() || !nodes->is_array()) {
      malformed("CLUSTER SHARDS", reply);
    }
    if (slots->elements.empty()) continue;  // a shard without slots serves nothing
    ClusterMaster master;
    bool have_master = false;
    for (const auto& node : nodes->elements) {
      const Reply* role = field_of(node, "role");
      const Reply* health = field_of(node, "health");
      if (!role) malformed("CLUSTER SHARDS", reply);
      if (role->str == "master") {
        const Reply* endpoint = field_of(node, "endpoint");
        const Reply* ip = field_of(node, "ip");
        const Reply* port = field_of(node, "port");
        if (!port) port = field_of(node, "tls-port");
        if (!port || as_number(*port) <= 0 || as_number(*port) > 65535) {
          malformed("CLUSTER SHARDS", reply);
        }
        std::string host = endpoint ? endpoint->str : "";
        if ((host.empty() || host == "?") && ip) host = ip->str;
        master.host = usable_host(host, asked_host);
        master.port = static_cast<std::uint16_t>(as_number(*port));
        have_master = true;
      } else if (!health || health->str == "online") {
        ++master.replicas;
      }
    }
    if (!have_master) continue;  // no master right now (failover in progress)
    const auto m = master_index(map, index, master);
    for (std::size_t i = 0; i + 1 < slots->elements.size(); i += 2) {
      const long long first = as_number(slots->elements[i]);
      const long long last = as_number(slots->elements[i + 1]);
      if (!valid_range(first, last)) malformed("CLUSTER SHARDS", reply);
      map.ranges.push_back(SlotRange{static_cast<int>(first), static_cast<int>(last), m});
    }
  }
  return map;
}

SlotMap parse_cluster_slots(const Reply& reply, const std::string& asked_host) {
  if (!reply.is_array()) malformed("CLUSTER SLOTS", reply);
  SlotMap map;
  std::map<std::string, std::size_t> index;
  for (const auto& range : reply.elements) {
    // [first, last, [ip, port, id ...], [replica ip, port, id ...] ...]
    if (!range.is_array() || range.elements.size() < 3 || !range.elements[2].is_array() ||
        range.elements[2].elements.size() < 2) {
      malformed("CLUSTER SLOTS", reply);
    }
    const long long first = as_number(range.elements[0]);
    const long long last = as_number(range.elements[1]);
    const long long port = as_number(range.elements[2].elements[1]);
    if (!valid_range(first, last) || port <= 0 || port > 65535) malformed("CLUSTER SLOTS", reply);
    ClusterMaster master;
    master.host = usable_host(range.elements[2].elements[0].str, asked_host);
    master.port = static_cast<std::uint16_t>(port);
    master.replicas = static_cast<int>(range.elements.size()) - 3;
    const auto m = master_index(map, index, master);
    map.ranges.push_back(SlotRange{static_cast<int>(first), static_cast<int>(last), m});
  }
  return map;
}

bool parse_redirect(const std::string& error, bool& ask, int& slot, std::string& host,
                    std::uint16_t& port) {
  std::string_view rest = error;
  if (rest.rfind("MOVED ", 0) == 0) {
    ask = false;
    rest.remove_prefix(6);
  } else if (rest.rfind("ASK ", 0) == 0) {
    ask = true;
    rest.remove_prefix(4);
  } else {
    return false;
  }
  const auto space = rest.find(' ');
  if (space == std::string_view::npos) return false;
  const auto slot_text = rest.substr(0, space);
  if (!parse_decimal(slot_text, slot) || slot < 0 || slot >= 16384) return false;
  const auto address = rest.substr(space + 1);
  const auto colon = address.rfind(':');
  if (colon == std::string_view::npos) return false;
  std::uint16_t p = 0;
  if (!parse_port_number(address.substr(colon + 1), p)) return false;
  host = std::string(address.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  port = static_cast<std::uint16_t>(p);
  return true;
}

}  // namespace redisync::net
