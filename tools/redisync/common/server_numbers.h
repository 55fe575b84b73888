// SPDX-License-Identifier: Apache-2.0
// Strict readers of the numbers (a counter, a permit count, a sorted-set score) and key types
// the CLI reads back from Redis. The library's rules (src/net/server_text.h): the whole text a
// decimal integer, no spaces, no '+', no overflow. std::stoll read " 5" as 5 and "12abc" as 12, and
// threw std::invalid_argument "stoll" for the rest; std::stod read "nan" and "inf", whose cast
// to an integer is undefined.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "redisync/client.h"
#include "redisync/reply.h"

namespace redisync::cli {

/// All of `text` as a decimal integer, else nullopt.
std::optional<long long> integer_text(std::string_view text);

/// A sorted-set score as Redis prints it: a decimal integer, or else a finite double written
/// in full ("1.7e12"; nothing before or after it) whose value fits a long long, truncated
/// toward zero. nullopt otherwise (nan, inf, out of range, trailing text).
std::optional<long long> score_text(std::string_view text);

/// The integer a key holds, from a GET reply (nil = 0). Anything else throws CliError
/// (exit 1) "<where> holds '<value>', not an integer" (value cut to 64 bytes).
long long stored_integer(const Reply& reply, const std::string& where);

/// The type of `key` (TYPE: "none", "string", "hash", ...). A reply that is no type name
/// (a server or proxy that misbehaves) throws CliError (exit 1) naming it, rather than
/// being shown as a key of type "" or "OK".
std::string key_type(Client& client, const std::string& key);

}  // namespace redisync::cli
