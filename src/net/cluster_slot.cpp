// SPDX-License-Identifier: Apache-2.0
#include "net/cluster_slot.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace redisync::net {

namespace {

constexpr std::array<std::uint16_t, 256> make_crc_table() {
  std::array<std::uint16_t, 256> table{};
  for (unsigned i = 0; i < 256; ++i) {
    unsigned crc = i << 8;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1;
    table[i] = static_cast<std::uint16_t>(crc & 0xffff);
  }
  return table;
}

constexpr auto kCrcTable = make_crc_table();

bool equals_nocase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::toupper(static_cast<unsigned char>(x)) ==
                  std::toupper(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::uint16_t crc16(std::string_view data) {
  std::uint16_t crc = 0;
  for (unsigned char c : data) {
    crc = static_cast<std::uint16_t>((crc << 8) ^ kCrcTable[((crc >> 8) ^ c) & 0xff]);
  }
  return crc;
}

std::string_view hash_tag_of(std::string_view key) {
  const auto open = key.find('{');
  if (open == std::string_view::npos) return key;
  const auto close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

std::uint16_t key_slot(std::string_view key) {
  return static_cast<std::uint16_t>(crc16(hash_tag_of(key)) & (kClusterSlots - 1));
}

bool routing_key(const std::vector<std::string>& args, std::string_view& key) {
  if (args.size() < 2) return false;
  const std::string_view name = args[0];
  if (equals_nocase(name, "EVALSHA") || equals_nocase(name, "EVAL") ||
      equals_nocase(name, "EVALSHA_RO") || equals_nocase(name, "EVAL_RO") ||
      equals_nocase(name, "FCALL") || equals_nocase(name, "FCALL_RO")) {
    if (args.size() < 4 || args[2] == "0") return false;
    key = args[3];
    return true;
  }
  static constexpr std::string_view keyless[] = {
      "INFO",   "PING",    "WAIT",    "ASKING", "CLUSTER", "PUBSUB", "SCRIPT", "FLUSHALL",
      "FLUSHDB", "DBSIZE", "TIME",    "ROLE",   "CLIENT",  "CONFIG", "ECHO",   "COMMAND",
      "PUBLISH", "SPUBLISH", "READONLY", "READWRITE", "HELLO", "AUTH", "SELECT", "LASTSAVE",
      "MEMORY", "SLOWLOG", "LATENCY", "RANDOMKEY", "SCAN", "KEYS", "FUNCTION", "ACL"};
  for (auto k : keyless) {
    if (equals_nocase(name, k)) {
      // SPUBLISH routes by its channel, like a key.
      if (equals_nocase(name, "SPUBLISH")) break;
      return false;
    }
  }
  key = args[1];
  return true;
}

}  // namespace redisync::net
