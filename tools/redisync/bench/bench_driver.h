// SPDX-License-Identifier: Apache-2.0
// `redisync-bench driver ...`: one worker process of the multi-process contention benchmark
// (bench/run). A developer tool, built beside the CLI and not installed (bench_main.cpp).
// The harness starts several, each with the same --key, --start-at-ns and --deadline-ns, and
// merges their event files. Contract: every flag is "--name value"; stdout is exactly one
// JSON line at the end; diagnostics go to stderr.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace redisync::cli {

struct BenchDriverOptions {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string key = "redisync:bench";
  std::int64_t iterations = 1000;   ///< upper bound of measured critical sections
  std::int64_t warmup = 0;          ///< unmeasured acquire+release pairs before the start
  std::string cs = "none";          ///< none | counter
  std::string counter_key;          ///< default: <key>:counter
  std::int64_t ttl_ms = 10000;      ///< fixed lease
  std::int64_t retry_delay_ms = 0;  ///< ignored (push-based waiting) except by --kind spin
  std::int64_t start_at_ns = 0;     ///< CLOCK_MONOTONIC instant to start measuring; 0 = now
  std::int64_t deadline_ns = 0;     ///< no new section after this instant; 0 = none
  std::string events;               ///< event file; empty = none
  std::int64_t worker_id = 0;
  std::int64_t think_us = 0;  ///< sleep after each release
  std::string kind = "lock";  ///< lock | fair | fenced | spin | rw-write | latch-ring
  std::int64_t workers = 1;   ///< ring size (latch-ring)
};

/// Adds the `driver` subcommand to `app` (redisync-bench); returns it.
CLI::App* add_bench_driver_command(CLI::App& app, BenchDriverOptions& options);

/// Runs the worker; 0 on success, 1 if any operation failed (still prints the JSON line).
int bench_driver_command(const BenchDriverOptions& options);

}  // namespace redisync::cli
