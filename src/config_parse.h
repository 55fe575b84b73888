// SPDX-License-Identifier: Apache-2.0
// What the files of Config share (config.cpp, config_url.cpp, config_url_options.cpp): the
// error every config check throws, and the pieces of text parsing the URL and its options use.
#pragma once

#include <charconv>
#include <string>
#include <string_view>
#include <system_error>

#include "redisync/config.h"

namespace redisync::config_parse {

/// Throws ConfigError("redisync config: " + message).
[[noreturn]] void fail(const std::string& message);

/// "250 ms".
std::string ms_text(Duration d);

// Parses all of `text` as a decimal integer: no sign for unsigned types, no '+', no spaces,
// no trailing junk, no overflow.
template <typename T>
bool parse_int(std::string_view text, T& out) {
  if (text.empty()) return false;
  const char* first = text.data();
  const char* last = first + text.size();
  auto [ptr, ec] = std::from_chars(first, last, out);
  return ec == std::errc() && ptr == last;
}

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }

/// RFC 3986 percent-decoding; `what` names the text in errors (never the text itself).
std::string percent_decode(std::string_view text, std::string_view what);

/// A database number (>= 0); `source` names where it came from in errors.
int parse_database(std::string_view text, std::string_view source);

inline constexpr const char* kPasswordEscapes =
    "write '&', '=' and '%' in a password as %26, %3D and %25";

/// Applies the URL's query "a=1&b=2" to `config`; returns whether any option followed a
/// password option (config_url_options.cpp says more).
bool apply_query(std::string_view query, Config& config);

}  // namespace redisync::config_parse
