// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <charconv>
#include <set>

#include "cli_error.h"
#include "duration.h"
#include "metrics_option.h"
#include "names.h"
#include "option_checks.h"
#include "process.h"
#include "redis_option.h"
#include "redisync/permit_expirable_semaphore.h"
#include "run_settings.h"

namespace redisync::cli {
namespace {

// The kind flags given, as they were spelt ("--fair", ...).
std::vector<std::string> kind_flags(const RunOptions& o) {
  std::vector<std::string> flags;
  if (o.fair) flags.emplace_back("--fair");
  if (o.read) flags.emplace_back("--read");
  if (o.write) flags.emplace_back("--write");
  if (o.fenced) flags.emplace_back("--fenced");
  if (!o.semaphore.empty()) flags.emplace_back("--semaphore");
  return flags;
}

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (std::size_t i = 0; i < words.size(); ++i) text += (i ? " and " : "") + words[i];
  return text;
}

std::int64_t parse_permits(const std::string& text) {
  std::int64_t n = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  // The library's own limit (a larger count was once written, and then refused by every step).
  constexpr auto limit = PermitExpirableSemaphore::kMaxCount;
  if (ec != std::errc() || ptr != text.data() + text.size() || n <= 0 || n > limit) {
    throw UsageError("--semaphore N: N must be a whole number of permits >= 1 and <= " +
                     std::to_string(limit) + " (got '" + text + "')");
  }
  return n;
}

HoldSpec parse_hold(const RunOptions& o) {
  HoldSpec hold;
  const auto kinds = kind_flags(o);
  if (!o.multi.empty()) {
    if (!o.name.empty()) {
      throw UsageError("run: give the names either after --multi or as NAME, not both (got NAME '" +
                       o.name + "' and --multi)");
    }
    if (kinds.size() > 1 || o.fenced || !o.semaphore.empty()) {
      throw UsageError("run: --multi combines with at most one of --fair, --read, --write (got " +
                       joined(kinds) + ")");
    }
    std::set<std::string> seen;
    for (const auto& n : o.multi) {
      check_name(n, "run", "a --multi NAME");
      if (!seen.insert(n).second) throw UsageError("run: --multi names '" + n + "' twice");
    }
    hold.kind = HoldKind::multi;
    hold.names = o.multi;
    hold.member_kind = o.fair ? HoldKind::fair : o.read ? HoldKind::read
                                              : o.write ? HoldKind::write
                                                        : HoldKind::lock;
    return hold;
  }
  if (kinds.size() > 1) {
    throw UsageError("run: " + joined(kinds) + " exclude each other (one kind of lock per run)");
  }
  check_name(o.name, "run");
  hold.names = {o.name};
  if (o.fair) hold.kind = HoldKind::fair;
  if (o.read) hold.kind = HoldKind::read;
  if (o.write) hold.kind = HoldKind::write;
  if (o.fenced) hold.kind = HoldKind::fenced;
  if (!o.semaphore.empty()) {
    hold.kind = HoldKind::semaphore;
    hold.permits = parse_permits(o.semaphore);
  }
  return hold;
}

}  // namespace

RunSettings parse_run_settings(const RunOptions& o, Config& config) {
  RunSettings s;
  if (o.command.empty()) {
    throw UsageError("run: missing the command to run (usage: redisync run NAME -- CMD ARGS...)");
  }
  s.hold = parse_hold(o);
  if (!o.wait.empty()) s.wait = parse_duration_flag(o.wait, "--wait");
  if (!o.lease.empty()) {
    s.lease = parse_duration_flag(o.lease, "--lease");
    if (s.lease <= Duration{0}) throw UsageError("--lease must be > 0 (got '" + o.lease + "')");
  }
  if (!o.watchdog_timeout.empty()) {
    config.lock_watchdog_timeout = parse_duration_flag(o.watchdog_timeout, "--watchdog-timeout");
    if (config.lock_watchdog_timeout <= Duration{0}) {
      throw UsageError("--watchdog-timeout must be > 0 (got '" + o.watchdog_timeout + "')");
    }
  }
  // A fair-lock waiter killed while queued (SIGKILL) keeps its place at the head for the wait
  // allowance (the library's default: 5 s). With a shorter watchdog lease, `run` takes that as
  // the allowance, so a dead waiter's place ends no later than a dead holder's lease would.
  // A live waiter polls at least every third of it and keeps its place.
  config.fair_lock_wait_timeout =
      std::min(config.fair_lock_wait_timeout, config.lock_watchdog_timeout);
  s.executable = find_executable(o.command[0]);
  if (s.executable.empty()) throw CliError(kExitNotFound, o.command[0] + ": command not found");
  return s;
}

CLI::App* add_run_command(CLI::App& app, RunOptions& o) {
  CLI::App* run = app.add_subcommand("run", "Run a command while holding a lock");
  run->footer(
      "Run a command while holding a lock: acquire NAME, run CMD, release when it exits.\n"
      "The lock's lease is renewed while CMD runs. Exit status: CMD's (128+signal if it was\n"
      "killed); 75 not acquired within --wait; 76 lock lost while CMD ran (CMD's process group\n"
      "gets SIGTERM, SIGKILL 5 s later); 69 Redis unreachable; 64 usage error; 127 CMD not\n"
      "found; 1 other errors (e.g. --semaphore N differs from the semaphore's total, or\n"
      "NAME holds other data: refused before anything is written).\n\n"
      "Kinds (default: a plain reentrant lock, Redisson RLock): --fair (FIFO), --read / --write\n"
      "(read-write lock: many --read commands run together, like flock -s), --fenced (the\n"
      "fencing token reaches CMD as $REDISYNC_FENCING_TOKEN), --semaphore N (hold one of N\n"
      "permits of a permit-expirable semaphore; created with N permits if absent, and an\n"
      "existing one must have N in total), --multi NAME... (all of several locks at once;\n"
      "with --fair, --read or --write each is of that kind).\n"
      "CMD runs in its own process group: a lost lock signals the whole group, and if run\n"
      "itself dies (even by SIGKILL) the group is SIGKILLed.\n\n"
      "Example: redisync run --wait 10s nightly-report -- ./make-report.sh --full");
  add_redis_option(*run, o.redis_url);
  run->add_option("--wait", o.wait,
                  "How long to wait for the lock: 0 = one try; default: forever. "
                  "Durations need a unit: 250ms, 1.5s, 2m, 1h, 1m30s")
      ->check(non_empty());
  run->add_option("--lease", o.lease,
                  "Fixed lease, never renewed (default: watchdog lease, renewed while CMD runs). "
                  "If CMD outlives it, others may take the lock meanwhile and run exits 76")
      ->check(non_empty());
  run->add_option("--watchdog-timeout", o.watchdog_timeout,
                  "Watchdog lease, renewed every third of it (default 30s)")
      ->check(non_empty());
  run->add_flag("--fair", o.fair, "A fair lock: granted in request order (Redisson RFairLock)");
  run->add_flag("--read", o.read, "The read side of a read-write lock (shared, like flock -s)");
  run->add_flag("--write", o.write, "The write side of a read-write lock (exclusive)");
  run->add_flag("--fenced", o.fenced,
                "A fenced lock; CMD gets the token in $REDISYNC_FENCING_TOKEN");
  run->add_option("--semaphore", o.semaphore,
                  "Hold one of N permits of semaphore NAME (N >= 1, the same for every user)")
      ->type_name("N")
      ->check(non_empty());
  run->add_option("--multi", o.multi, "Hold all of these locks at once (instead of NAME)")
      ->type_name("NAME...")
      ->expected(1, -1);
  run->add_flag("-v,--verbose", o.verbose, "Print acquire/release lines on stderr");
  add_metrics_option(*run, o.metrics_listen);  // metrics_option.h
  run->add_option("name", o.name, "Lock name (not with --multi)");
  run->add_option("command", o.command,
                  "CMD ARGS...: the command to run, after NAME (its options are its own) or "
                  "after '--' (needed after --multi NAME...)");
  return run;
}

}  // namespace redisync::cli
