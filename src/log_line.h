// SPDX-License-Identifier: Apache-2.0
// The one place the library's diagnostic lines leave it: Config::log, else stderr.
#pragma once

#include <string_view>

#include "redisync/config.h"

namespace redisync::detail {

/// Hands `line` (no prefix, no newline) to config.log, or writes "redisync: <line>" on stderr
/// when no hook is set. Never throws (a throwing hook is ignored).
void log_line(const Config& config, std::string_view line) noexcept;

/// Makes `config` (a Client's, outliving the thread) this thread's, and returns the one it
/// replaces: set by the thread running the Client's loop (its I/O thread, or a caller blocked
/// in a call), so lines raised there without a Client at hand (an async handler's exception)
/// reach that Client's hook.
const Config* set_thread_log_config(const Config* config) noexcept;

/// log_line with this thread's Config (set_thread_log_config), or to stderr as
/// "redisync: <line>" on any other thread.
void log_line_on_this_thread(std::string_view line) noexcept;

}  // namespace redisync::detail
