// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <charconv>
#include <set>

#include "cli_error.h"
#include "duration.h"
#include "kinds.h"
#include "metrics_option.h"
#include "names.h"
#include "option_checks.h"
#include "process.h"
#include "redis_option.h"
#include "redisync/permit_expirable_semaphore.h"
#include "run_settings.h"

namespace redisync::cli {
namespace {

// The kinds `run` holds (--kind); the members of --multi are one of kMultiMemberKinds.
constexpr Kind kRunKinds[] = {Kind::lock,        Kind::fair_lock,
                              Kind::read_lock,   Kind::write_lock,
                              Kind::fenced_lock, Kind::permit_expirable_semaphore};
constexpr Kind kMultiMemberKinds[] = {Kind::lock, Kind::fair_lock, Kind::read_lock,
                                      Kind::write_lock};

// A kind as given: "--kind fair-lock", or an earlier flag ("--fair").
struct KindChoice {
  std::string spelt;
  Kind kind;
};

std::vector<KindChoice> kind_choices(const RunOptions& o) {
  std::vector<KindChoice> choices;
  if (!o.kind.empty()) {
    choices.push_back({"--kind " + o.kind, parse_kind_option(o.kind, kRunKinds, "run: --kind")});
  }
  if (o.fair) choices.push_back({"--fair", Kind::fair_lock});
  if (o.read) choices.push_back({"--read", Kind::read_lock});
  if (o.write) choices.push_back({"--write", Kind::write_lock});
  if (o.fenced) choices.push_back({"--fenced", Kind::fenced_lock});
  if (!o.semaphore.empty()) choices.push_back({"--semaphore", Kind::permit_expirable_semaphore});
  return choices;
}

std::string joined(const std::vector<KindChoice>& choices) {
  std::string text;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    text += (i ? " and " : "") + choices[i].spelt;
  }
  return text;
}

std::int64_t parse_permits(const std::string& text, const std::string& option) {
  std::int64_t n = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  // The library's own limit (a larger count was once written, and then refused by every step).
  constexpr auto limit = PermitExpirableSemaphore::kMaxCount;
  if (ec != std::errc() || ptr != text.data() + text.size() || n <= 0 || n > limit) {
    throw UsageError(option + " N: N must be a whole number of permits >= 1 and <= " +
                     std::to_string(limit) + " (got '" + text + "')");
  }
  return n;
}

// The semaphore's total: --permits N or --semaphore N (one of them, with that kind only).
std::int64_t permits_of(const RunOptions& o, Kind kind) {
  const bool semaphore = kind == Kind::permit_expirable_semaphore;
  if (!o.permits.empty() && !semaphore) {
    throw UsageError("run: --permits N goes with --kind " +
                     std::string(kind_name(Kind::permit_expirable_semaphore)) + " (got " +
                     std::string(kind_name(kind)) + ")");
  }
  if (!semaphore) return 0;
  if (!o.permits.empty() && !o.semaphore.empty()) {
    throw UsageError("run: give the number of permits once: --permits N or --semaphore N");
  }
  if (!o.semaphore.empty()) return parse_permits(o.semaphore, "--semaphore");
  if (o.permits.empty()) {
    throw UsageError("run: --kind " + std::string(kind_name(kind)) +
                     " needs --permits N (the semaphore's total, the same for every user)");
  }
  return parse_permits(o.permits, "--permits");
}

HoldSpec parse_hold(const RunOptions& o) {
  HoldSpec hold;
  const auto kinds = kind_choices(o);
  const Kind kind = kinds.empty() ? Kind::lock : kinds.front().kind;
  if (!o.multi.empty()) {
    if (!o.name.empty()) {
      throw UsageError("run: give the names either after --multi or as NAME, not both (got NAME '" +
                       o.name + "' and --multi)");
    }
    const bool member_kind = std::find(std::begin(kMultiMemberKinds), std::end(kMultiMemberKinds),
                                       kind) != std::end(kMultiMemberKinds);
    if (kinds.size() > 1 || !member_kind || !o.permits.empty()) {
      throw UsageError("run: --multi combines with at most one --kind of " +
                       kind_list(kMultiMemberKinds) + " (got " + joined(kinds) + ")");
    }
    std::set<std::string> seen;
    for (const auto& n : o.multi) {
      check_name(n, "run", "a --multi NAME");
      if (!seen.insert(n).second) throw UsageError("run: --multi names '" + n + "' twice");
    }
    hold.kind = HoldKind::multi;
    hold.names = o.multi;
    hold.member_kind = *hold_kind_of(kind);
    return hold;
  }
  if (kinds.size() > 1) {
    throw UsageError("run: " + joined(kinds) + " exclude each other (one kind of lock per run)");
  }
  check_name(o.name, "run");
  hold.names = {o.name};
  hold.kind = *hold_kind_of(kind);  // kRunKinds: each has its hold
  hold.permits = permits_of(o, kind);
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
      "Kinds (--kind; default lock, a reentrant lock, Redisson RLock): fair-lock (FIFO),\n"
      "read-lock / write-lock (the two sides of a read-write-lock: many read-lock commands run\n"
      "together, like flock -s), fenced-lock (the fencing token reaches CMD as\n"
      "$REDISYNC_FENCING_TOKEN), permit-expirable-semaphore with --permits N (hold one of N\n"
      "permits; created with N permits if absent, and an existing one must have N in total).\n"
      "--multi NAME... holds all of several locks at once, each of --kind lock, fair-lock,\n"
      "read-lock or write-lock. Earlier spellings still work: --fair, --read, --write,\n"
      "--fenced, --semaphore N.\n"
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
  run->add_option("--kind", o.kind, "What to hold: " + kind_list(kRunKinds) + " (default lock)")
      ->type_name("KIND")
      ->check(non_empty());
  run->add_option("--permits", o.permits,
                  "With --kind permit-expirable-semaphore: its total N (>= 1, the same for "
                  "every user); run holds one of them")
      ->type_name("N")
      ->check(non_empty());
  const std::string earlier = "Earlier spellings";
  run->add_flag("--fair", o.fair, "= --kind fair-lock")->group(earlier);
  run->add_flag("--read", o.read, "= --kind read-lock")->group(earlier);
  run->add_flag("--write", o.write, "= --kind write-lock")->group(earlier);
  run->add_flag("--fenced", o.fenced, "= --kind fenced-lock")->group(earlier);
  run->add_option("--semaphore", o.semaphore, "= --kind permit-expirable-semaphore --permits N")
      ->type_name("N")
      ->check(non_empty())
      ->group(earlier);
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
