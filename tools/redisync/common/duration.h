// SPDX-License-Identifier: Apache-2.0
// Durations on the command line: "250ms", "1.5s", "2m", "1h", "1m30s"; a number needs a unit.
#pragma once

#include <string>

#include "redisync/config.h"

namespace redisync::cli {

/// Parses `text` given for `flag` (e.g. "--wait"): one or more parts NUMBER UNIT, the units
/// h, m, s, ms from largest to smallest, each at most once ("1h2m3.5s"); NUMBER is digits with
/// an optional decimal part; the sum must be a whole number of milliseconds, at most
/// redisync::max_duration. "0" alone is zero. A bare number ("10") is refused with a hint, as
/// flock(1) and timeout(1) read it as seconds and the CLI once read it as milliseconds.
/// Throws UsageError "FLAG TEXT: why" for anything else (negative, too large, junk).
Duration parse_duration_flag(const std::string& text, const std::string& flag);

/// "850 ms", "2 s", "1.5 s": for messages.
std::string format_duration(Duration d);

}  // namespace redisync::cli
