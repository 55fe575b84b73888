// SPDX-License-Identifier: Apache-2.0
// Redis Cluster key slots: CRC16 (XMODEM) of the key's hash tag, modulo 16384, and the key a
// command is routed by.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redisync::net {

inline constexpr int kClusterSlots = 16384;

/// CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), as Redis Cluster uses it.
std::uint16_t crc16(std::string_view data);

/// The part of `key` that is hashed: the text between the first '{' and the next '}' when that
/// is non-empty, otherwise the whole key (the cluster hash-tag rule).
std::string_view hash_tag_of(std::string_view key);

/// The cluster slot (0..16383) of `key`.
std::uint16_t key_slot(std::string_view key);

/// The key that decides where `args` runs: the first key of EVAL/EVALSHA (none when numkeys
/// is 0), nothing for commands without keys (INFO, PING, WAIT, CLUSTER ...), else args[1].
/// Returns false when the command has no key (any master may run it).
bool routing_key(const std::vector<std::string>& args, std::string_view& key);

}  // namespace redisync::net
