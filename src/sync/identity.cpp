// SPDX-License-Identifier: Apache-2.0
#include "sync/identity.h"

#include <atomic>
#include <random>

#include "redisync/errors.h"

namespace redisync::sync {

namespace {

std::mt19937_64& rng() {
  thread_local std::mt19937_64 engine{[] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }()};
  return engine;
}

std::string hex_bytes(unsigned char* bytes, std::size_t n) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out += hex[bytes[i] >> 4];
    out += hex[bytes[i] & 15];
  }
  return out;
}

void random_bytes(unsigned char* out, std::size_t n) {
  auto& r = rng();
  for (std::size_t i = 0; i < n; i += 8) {
    std::uint64_t v = r();
    for (std::size_t j = 0; j < 8 && i + j < n; ++j) out[i + j] = static_cast<unsigned char>(v >> (8 * j));
  }
}

std::atomic<std::int64_t> next_id{1};

}  // namespace

std::string random_uuid() {
  unsigned char b[16];
  // The Client id must be unique across every participant: seed from the OS, not the clock.
  std::random_device rd;
  for (int i = 0; i < 16; i += 4) {
    const auto v = rd();
    for (int j = 0; j < 4; ++j) b[i + j] = static_cast<unsigned char>(v >> (8 * j));
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // RFC 4122 variant
  const std::string h = hex_bytes(b, 16);
  return h.substr(0, 8) + "-" + h.substr(8, 4) + "-" + h.substr(12, 4) + "-" + h.substr(16, 4) +
         "-" + h.substr(20, 12);
}

std::string random_request_id() {
  unsigned char b[16];
  random_bytes(b, 16);
  return hex_bytes(b, 16);
}

std::int64_t thread_owner_id() {
  thread_local const std::int64_t id = next_id.fetch_add(1);
  return id;
}

std::int64_t next_owner_id() { return next_id.fetch_add(1); }

std::string hash_tag(const std::string& name) {
  if (name.find('{') != std::string::npos) return name;
  return "{" + name + "}";
}

bool one_slot_name(const std::string& name) {
  const auto open = name.find('{');
  if (open == std::string::npos) return name.find('}') == std::string::npos;
  const auto close = name.find('}', open + 1);
  return close != std::string::npos && close > open + 1;
}

void check_cluster_name(bool cluster, const std::string& name, const std::string& noun,
                        bool always_braced) {
  if (!cluster) return;
  if (always_braced && name.find_first_of("{}") != std::string::npos) {
    throw InvalidArgument("redisync: " + noun + " name '" + name +
                          "' cannot be used in a Redis Cluster: its channel puts the name in "
                          "braces, so with a brace in the name its keys and channel would hash "
                          "to different slots (use a name without '{' and '}')");
  }
  if (one_slot_name(name)) return;
  throw InvalidArgument(
      "redisync: " + noun + " name '" + name +
      "' cannot be used in a Redis Cluster: its keys and channels would hash to different "
      "slots (a name containing '{' needs a non-empty hash tag such as '{tag}'; a name "
      "without '{' must not contain '}')");
}

}  // namespace redisync::sync
