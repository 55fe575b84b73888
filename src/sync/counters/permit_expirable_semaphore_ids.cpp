// SPDX-License-Identifier: Apache-2.0
#include "sync/counters/permit_expirable_semaphore_ids.h"

#include <algorithm>
#include <charconv>
#include <random>

#include "redisync/errors.h"

namespace redisync::sync {

namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A printable, bounded rendering of user input for error messages.
std::string quoted(std::string_view text) {
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < 64; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (text.size() > 64) out += "...";
  return out + "'";
}

}  // namespace

std::string permit_id_to_hex(std::string_view raw) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(raw.size() * 2);
  for (char ch : raw) {
    const auto b = static_cast<unsigned char>(ch);
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

std::string permit_id_from_hex(std::string_view hex, const std::string& name) {
  const std::string where = " for permit-expirable semaphore '" + name + "'";
  if (hex.size() != kPermitIdBytes * 2) {
    throw InvalidArgument("redisync: malformed permit id " + quoted(hex) + where + ": " +
                          std::to_string(hex.size()) + " chars, expected 32 hex digits");
  }
  std::string raw(kPermitIdBytes, '\0');
  for (std::size_t i = 0; i < kPermitIdBytes; ++i) {
    const int hi = hex_value(hex[2 * i]);
    const int lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      throw InvalidArgument("redisync: malformed permit id " + quoted(hex) + where +
                            ": not a hex digit at position " +
                            std::to_string(hi < 0 ? 2 * i : 2 * i + 1));
    }
    raw[i] = static_cast<char>((hi << 4) | lo);
  }
  return raw;
}

std::string random_permit_id() {
  thread_local std::mt19937_64 engine{[] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }()};
  std::string raw(kPermitIdBytes, '\0');
  for (std::size_t i = 0; i < kPermitIdBytes; i += 8) {
    const std::uint64_t v = engine();
    for (std::size_t j = 0; j < 8; ++j) raw[i + j] = static_cast<char>((v >> (8 * j)) & 0xff);
  }
  return raw;
}

AttemptResult decode_acquire_reply(const Reply& reply) {
  if (reply.is_string() && reply.str == "OK") return {true, 0};
  if (reply.is_string() && !reply.str.empty() && reply.str[0] == ':') {
    // Whole ms; be lenient and stop at the first character that is not a digit.
    long long ms = 0;
    const char* first = reply.str.data() + 1;
    const char* last = reply.str.data() + reply.str.size();
    auto [ptr, ec] = std::from_chars(first, last, ms);
    if (ec == std::errc{} && ptr != first) return {false, std::max(ms, 1LL)};
  }
  return {false, -1};
}

}  // namespace redisync::sync
