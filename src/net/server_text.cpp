// SPDX-License-Identifier: Apache-2.0
#include "net/server_text.h"

#include "redisync/errors.h"

namespace redisync::net {

bool parse_port_number(std::string_view text, std::uint16_t& port) {
  unsigned value = 0;
  if (!parse_decimal(text, value) || value < 1 || value > 65535) return false;
  port = static_cast<std::uint16_t>(value);
  return true;
}

std::optional<int> parse_connected_replicas(std::string_view info) {
  constexpr std::string_view kField = "connected_slaves:";
  std::size_t at = info.find(kField);
  // The field starts a line ("\r\n" before it, or the reply's start).
  while (at != std::string_view::npos && at != 0 && info[at - 1] != '\n') {
    at = info.find(kField, at + 1);
  }
  if (at == std::string_view::npos) return 0;
  std::string_view value = info.substr(at + kField.size());
  value = value.substr(0, value.find('\n'));
  if (!value.empty() && value.back() == '\r') value.remove_suffix(1);
  int count = 0;
  if (!parse_decimal(value, count) || count < 0) return std::nullopt;
  return count;
}

bool parse_switch_master(std::string_view payload, std::string& name, std::string& host,
                         std::uint16_t& port) {
  std::string_view fields[5];
  for (std::size_t i = 0; i < 5; ++i) {
    const std::size_t space = payload.find(' ');
    if ((space == std::string_view::npos) != (i == 4)) return false;  // exactly five fields
    fields[i] = payload.substr(0, space);
    if (fields[i].empty()) return false;
    payload = i == 4 ? std::string_view() : payload.substr(space + 1);
  }
  std::uint16_t old_port = 0;
  std::uint16_t new_port = 0;
  if (!parse_port_number(fields[2], old_port) || !parse_port_number(fields[4], new_port)) {
    return false;
  }
  name = std::string(fields[0]);
  host = std::string(fields[3]);
  port = new_port;
  return true;
}

void throw_not_a_number(const Reply& reply, const std::string& what, const std::string& where) {
  constexpr std::size_t kShown = 64;
  std::string shown = reply.is_string() ? reply.str : reply.to_string();
  if (shown.size() > kShown) shown = shown.substr(0, kShown) + "...";
  throw ServerError(what + ": " + where + " holds '" + shown + "', not a number", reply.str);
}

}  // namespace redisync::net
