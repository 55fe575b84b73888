// SPDX-License-Identifier: Apache-2.0
// Durations on the command line: "250ms", "30s", "5m", "1h"; a bare integer means milliseconds.
#pragma once

#include <string>

#include "redisync/config.h"

namespace redisync::cli {

/// Parses `text` given for `flag` (e.g. "--wait") with redisync::parse_duration.
/// Throws UsageError naming the flag when the text is not a non-negative duration.
Duration parse_duration_flag(const std::string& text, const std::string& flag);

/// "850 ms", "2 s", "1.5 s": for messages.
std::string format_duration(Duration d);

}  // namespace redisync::cli
