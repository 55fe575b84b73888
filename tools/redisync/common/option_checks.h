// SPDX-License-Identifier: Apache-2.0
// Checks shared by the subcommands' options.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace redisync::cli {

/// Refuses an empty value (`--wait ''`): the option was given, so an empty value is a mistake
/// (an unset shell variable, say), never "use the default" (exit 64).
inline CLI::Validator non_empty() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        return value.empty() ? "an empty value is not allowed (leave the option out for its "
                               "default)"
                             : std::string();
      },
      "", "non_empty");  // nothing added to --help
}

}  // namespace redisync::cli
