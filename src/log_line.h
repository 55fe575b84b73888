// SPDX-License-Identifier: Apache-2.0
// The one place the library's diagnostic lines leave it: Config::log, else stderr.
#pragma once

#include <string_view>

#include "redisync/config.h"

namespace redisync::detail {

/// Hands `line` (no prefix, no newline) to config.log, or writes "redisync: <line>" on stderr
/// when no hook is set. Never throws (a throwing hook is ignored).
void log_line(const Config& config, std::string_view line) noexcept;

}  // namespace redisync::detail
