// SPDX-License-Identifier: Apache-2.0
// `redisync run`'s options, checked and converted (run_options.cpp); used by run_command.cpp.
#pragma once

#include <optional>
#include <string>

#include "redisync/config.h"
#include "run_command.h"
#include "run_holding.h"

namespace redisync::cli {

struct RunSettings {
  HoldSpec hold;
  std::optional<Duration> wait;  ///< nullopt: forever
  Duration lease{0};             ///< 0: watchdog
  std::string executable;
};

/// Checks every option (usage errors, exit 64, before anything connects) and applies
/// --watchdog-timeout to `config`. Throws UsageError / CliError (127: command not found).
RunSettings parse_run_settings(const RunOptions& options, Config& config);

}  // namespace redisync::cli
