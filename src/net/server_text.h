// SPDX-License-Identifier: Apache-2.0
// Strict readers of the numbers and fields servers send: reply values, INFO fields, Sentinel's
// +switch-master message. One parser for all of them, so "12abc", " 1", "+1", an overflow or
// a port of 70000 is refused everywhere the same way instead of read as something else.
//
// Threading: pure functions; the bool/optional forms never throw (they run on the I/O thread
// and in fuzz tests), stored_number throws ServerError (user threads).
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "net/reply.h"

namespace redisync::net {

/// All of `text` as a decimal integer of type T: digits, with a leading '-' only for a signed
/// T; no '+', no spaces, no trailing text, no overflow. False (and `out` untouched) otherwise.
template <typename T>
bool parse_decimal(std::string_view text, T& out) {
  T value{};
  const char* first = text.data();
  const char* last = first + text.size();
  const auto [end, ec] = std::from_chars(first, last, value);
  if (text.empty() || ec != std::errc{} || end != last) return false;
  out = value;
  return true;
}

/// A TCP port: parse_decimal in 1..65535.
bool parse_port_number(std::string_view text, std::uint16_t& port);

/// The `connected_slaves:` field of an INFO replication reply: 0 when the field is absent,
/// nullopt when it is there but not a non-negative number ending its line.
std::optional<int> parse_connected_replicas(std::string_view info);

/// Sentinel's +switch-master payload: "<name> <old host> <old port> <new host> <new port>",
/// exactly five fields separated by single spaces, both ports in 1..65535. False for anything
/// else (the caller ignores such a message).
bool parse_switch_master(std::string_view payload, std::string& name, std::string& host,
                         std::uint16_t& port);

/// The number a key holds, from a GET/HGET reply (nil = 0; a bulk string or an integer reply
/// that is a number of type T). Anything else throws ServerError
/// "<what>: <where> holds '<value>', not a number" (value cut to 64 bytes).
[[noreturn]] void throw_not_a_number(const Reply& reply, const std::string& what,
                                     const std::string& where);
template <typename T>
T stored_number(const Reply& reply, const std::string& what, const std::string& where) {
  T value{};
  if (reply.is_nil()) return value;
  if (reply.is_integer() && std::in_range<T>(reply.integer)) return static_cast<T>(reply.integer);
  if (reply.is_string() && parse_decimal(reply.str, value)) return value;
  throw_not_a_number(reply, what, where);
}

}  // namespace redisync::net
