// SPDX-License-Identifier: Apache-2.0
// redisync-bench: the benchmark's driver process (bench/run, bench/handoff_breakdown), apart
// from the installed `redisync`: a developer tool.
//   redisync-bench driver --host H --port P --key K --iterations N [--kind ...] ...
#include <CLI/CLI.hpp>

#include "bench_driver.h"
#include "cli_error.h"

int main(int argc, char** argv) {
  using namespace redisync::cli;
  CLI::App app("redisync-bench: one driver process of the contention benchmark (bench/run)",
               "redisync-bench");
  app.require_subcommand(1);
  BenchDriverOptions options;
  CLI::App* driver = add_bench_driver_command(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  try {
    if (driver->parsed()) return bench_driver_command(options);
    throw UsageError("no subcommand given (see redisync-bench --help)");
  } catch (...) {
    return report_current_exception();
  }
}
