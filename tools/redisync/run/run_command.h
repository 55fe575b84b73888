// SPDX-License-Identifier: Apache-2.0
// `redisync run [KIND] NAME -- CMD ARGS...`: run a command while holding a distributed lock of
// any kind, several locks (--multi), or one permit of a semaphore (--semaphore N).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace redisync::cli {

struct RunOptions {
  std::string redis_url;
  std::string wait;              ///< empty: wait forever
  std::string lease;             ///< empty: watchdog lease (renewed while the command runs)
  std::string watchdog_timeout;  ///< empty: the Config default (30 s)
  bool verbose = false;
  // --- kind (at most one; --multi combines with lock, fair-lock, read-lock or write-lock) ---
  std::string kind;     ///< --kind KIND (kinds.h), by name or alias; empty: not given
  std::string permits;  ///< --permits N (permit-expirable-semaphore); empty: not given
  // Earlier spellings, still accepted: --fair, --read, --write, --fenced = --kind fair-lock,
  // read-lock, write-lock, fenced-lock; --semaphore N = --kind permit-expirable-semaphore
  // --permits N.
  bool fair = false;
  bool read = false;
  bool write = false;
  bool fenced = false;
  std::string semaphore;            ///< N as given; empty: not a semaphore
  std::vector<std::string> multi;  ///< --multi NAME...: several locks at once
  std::string metrics_listen;  ///< --metrics-port [HOST:]PORT; empty: none
  std::string name;
  std::vector<std::string> command;  ///< CMD ARGS...: the words after "--"
};

/// Adds the `run` subcommand with its flags bound to `options`.
CLI::App* add_run_command(CLI::App& app, RunOptions& options);

/// Runs it. Returns the command's exit status (128+signal if it was killed), or 75 (not
/// acquired within --wait), 76 (lock lost), 69 (Redis unreachable), 64 (usage), 127.
/// Throws CliError / redisync::Error for the caller to report.
int run_command(const RunOptions& options);

}  // namespace redisync::cli
