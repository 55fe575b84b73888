// SPDX-License-Identifier: Apache-2.0
// `redisync demo`: several processes contend for one lock on a non-atomic counter; one of
// them is SIGKILLed inside its critical section; the watchdog lease frees the lock; the
// summary shows no update was lost.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace redisync::cli {

struct DemoOptions {
  std::string redis_url;  ///< empty: start a private redis-server
  int workers = 8;
  double seconds = 10;
  bool kill = true;
  std::string kind = "lock";  ///< lock, fair, rw, fenced
};

CLI::App* add_demo_command(CLI::App& app, DemoOptions& options);

/// 0 if no update was lost (and nothing else went wrong), else 1; 69 without a server.
int demo_command(const DemoOptions& options);

}  // namespace redisync::cli
