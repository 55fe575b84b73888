// SPDX-License-Identifier: Apache-2.0
// `redisync ls [PATTERN] [--json]` and `redisync top [PATTERN]`: list / watch the locks and
// synchronizers in Redis (see ls_scan.h for how they are found).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace redisync::cli {

struct LsOptions {
  std::string redis_url;
  std::string pattern = "*";
  bool json = false;
  int count = 100;  ///< SCAN COUNT hint
  bool counts = false;  ///< also integer strings that may be anybody's number
};

CLI::App* add_ls_command(CLI::App& app, LsOptions& options);
/// Prints one line per lock/synchronizer (nothing when none matches); 0. 69 unreachable.
int ls_command(const LsOptions& options);

struct TopOptions {
  std::string redis_url;
  std::string pattern = "*";
  std::string interval = "1s";
  int count = 100;
};

CLI::App* add_top_command(CLI::App& app, TopOptions& options);
/// Refreshes the view every interval until 'q' (or SIGINT/SIGTERM/SIGHUP); restores the
/// terminal. 0; 69 unreachable.
int top_command(const TopOptions& options);

}  // namespace redisync::cli
