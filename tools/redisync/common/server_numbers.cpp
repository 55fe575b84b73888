// SPDX-License-Identifier: Apache-2.0
#include "server_numbers.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <system_error>

#include "cli_error.h"
#include "net/server_text.h"

namespace redisync::cli {

std::optional<long long> integer_text(std::string_view text) {
  long long value = 0;
  if (!net::parse_decimal(text, value)) return std::nullopt;
  return value;
}

std::optional<long long> score_text(std::string_view text) {
  if (auto exact = integer_text(text)) return exact;
  double value = 0;
  const char* first = text.data();
  const char* last = first + text.size();
  const auto [end, ec] = std::from_chars(first, last, value);
  if (text.empty() || ec != std::errc{} || end != last || !std::isfinite(value)) {
    return std::nullopt;
  }
  // Within long long (2^63 is exactly representable; the range is [-2^63, 2^63)).
  if (value < -9223372036854775808.0 || value >= 9223372036854775808.0) return std::nullopt;
  return static_cast<long long>(value);
}

long long stored_integer(const Reply& reply, const std::string& where) {
  if (reply.is_nil()) return 0;
  if (reply.is_integer()) return reply.integer;
  if (reply.is_string()) {
    if (auto value = integer_text(reply.str)) return *value;
  }
  const std::string shown = reply.str.size() > 64 ? reply.str.substr(0, 64) + "..." : reply.str;
  throw CliError(kExitFailure, where + " holds '" + shown + "', not an integer");
}

std::string key_type(Client& client, const std::string& key) {
  const Reply reply = client.execute({"TYPE", key});
  const bool word = reply.is_string() && !reply.str.empty() && reply.str.size() <= 32 &&
                    std::all_of(reply.str.begin(), reply.str.end(),
                                [](char c) { return (c >= 'a' && c <= 'z') || c == '-'; });
  if (!word) {
    throw CliError(kExitFailure, "redis: unexpected reply to TYPE " + key + ": " +
                                     reply.to_string().substr(0, 64));
  }
  return reply.str;
}

}  // namespace redisync::cli
