// SPDX-License-Identifier: Apache-2.0
#include "duration.h"

#include <cstdio>

#include "cli_error.h"
#include "redisync/errors.h"

namespace redisync::cli {

Duration parse_duration_flag(const std::string& text, const std::string& flag) {
  try {
    return parse_duration(text, flag);
  } catch (const ConfigError&) {
    throw UsageError("invalid duration for " + flag + ": '" + text +
                     "' (expected e.g. 250ms, 30s, 5m, or a bare number of milliseconds)");
  }
}

std::string format_duration(Duration d) {
  const long long ms = d.count();
  if (ms < 1000 || ms % 100 != 0) return std::to_string(ms) + " ms";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

}  // namespace redisync::cli
