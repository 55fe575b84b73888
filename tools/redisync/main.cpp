// SPDX-License-Identifier: Apache-2.0
// redisync: command-line tool for Redisson-compatible locks on Redis.
//   run      run a command while holding a lock
//   status   show a lock's (or synchronizer's) state
//   unlock   force-release a lock
//   ls       list locks and synchronizers (SCAN)
//   top      watch them live
//   demo     contention + crash demo with a summary
//   kinds    the kind names every command uses
#include <CLI/CLI.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "app_docs.h"
#include "cli_error.h"
#include "demo_command.h"
#include "demo_worker.h"
#include "kinds_command.h"
#include "ls_command.h"
#include "run_command.h"
#include "run_separator_hint.h"
#include "status_command.h"
#include "unlock_command.h"

#ifndef REDISYNC_VERSION
#define REDISYNC_VERSION "unknown"
#endif

namespace {

using namespace redisync::cli;

// `run NAME -- CMD ARGS...`: everything after the first "--" is the command, verbatim (its own
// flags must not be parsed as ours), so it is split off before CLI11 sees the arguments.
// `run NAME CMD ARGS...` gets its "--" first (with_run_separator).
struct SplitArgs {
  std::vector<std::string> ours;  // in reverse order, as CLI11's parse(vector) wants
  std::vector<std::string> command;
  bool has_separator = false;
};

SplitArgs split_command(const std::vector<std::string>& words) {
  SplitArgs split;
  std::vector<std::string> ours;
  const bool is_run = !words.empty() && words.front() == "run";
  for (const std::string& word : words) {
    if (is_run && !split.has_separator && word == "--") {
      split.has_separator = true;
      continue;
    }
    (split.has_separator ? split.command : ours).push_back(word);
  }
  split.ours.assign(ours.rbegin(), ours.rend());
  return split;
}

int run_main(int argc, char** argv) {
  CLI::App app(
      "redisync: Redisson-compatible distributed locks on Redis.\n"
      "Exit codes: 64 usage error (also a --redis database the server does not have),\n"
      "69 Redis unreachable, 77 Redis refused the credentials, 75 lock not acquired,\n"
      "76 lock lost, 1 other errors;\n"
      "`run` otherwise passes on the command's status.",
      "redisync");
  app.set_version_flag("--version", REDISYNC_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);

  RunOptions run_options;
  StatusOptions status_options;
  UnlockOptions unlock_options;
  DemoOptions demo_options;
  DemoWorkerOptions demo_worker_options;
  LsOptions ls_options;
  TopOptions top_options;
  KindsOptions kinds_options;
  CLI::App* run = add_run_command(app, run_options);
  CLI::App* status = add_status_command(app, status_options);
  CLI::App* unlock = add_unlock_command(app, unlock_options);
  CLI::App* ls = add_ls_command(app, ls_options);
  CLI::App* top = add_top_command(app, top_options);
  CLI::App* demo = add_demo_command(app, demo_options);
  CLI::App* demo_worker = add_demo_worker_command(app, demo_worker_options);
  CLI::App* kinds = add_kinds_command(app, kinds_options);

  const std::vector<std::string> words =
      with_run_separator(*run, std::vector<std::string>(argv + 1, argv + argc));
  // Hidden: the man page and the bash completion, written from this very App (app_docs.h).
  if (words == std::vector<std::string>{"--generate-man"}) {
    std::cout << render_man_page(app);
    return kExitOk;
  }
  if (words == std::vector<std::string>{"--generate-completion", "bash"}) {
    std::cout << render_bash_completion(app);
    return kExitOk;
  }
  SplitArgs args = split_command(words);
  try {
    app.parse(args.ours);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help (exit 0) or the error message
    if (code == 0) return kExitOk;
    const std::string hint = run_separator_hint(words, e);
    if (!hint.empty()) print_diagnostic(hint);
    return kExitUsage;
  }

  try {
    if (run->parsed()) {
      for (auto& word : args.command) run_options.command.push_back(std::move(word));
      return run_command(run_options);
    }
    if (status->parsed()) return status_command(status_options);
    if (unlock->parsed()) return unlock_command(unlock_options);
    if (ls->parsed()) return ls_command(ls_options);
    if (top->parsed()) return top_command(top_options);
    if (demo->parsed()) return demo_command(demo_options);
    if (demo_worker->parsed()) return demo_worker_command(demo_worker_options);
    if (kinds->parsed()) return kinds_command(kinds_options);
    throw UsageError("no subcommand given (see redisync --help)");
  } catch (...) {
    return report_current_exception();
  }
}

}  // namespace

int main(int argc, char** argv) { return run_main(argc, argv); }
