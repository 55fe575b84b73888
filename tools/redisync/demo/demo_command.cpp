// SPDX-License-Identifier: Apache-2.0
#include "demo_command.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include "cli_error.h"
#include "clock.h"
#include "demo_report.h"
#include "demo_worker.h"
#include "duration.h"
#include "embedded_server.h"
#include "events.h"
#include "process.h"
#include "progress.h"
#include "redis_option.h"
#include "redisync/client.h"
#include "server_numbers.h"

namespace redisync::cli {
namespace {

constexpr const char* kLockName = "redisync:demo";
constexpr std::int64_t kWatchdogMs = 2000;           // short, so the kill recovers quickly
constexpr std::int64_t kStartDelayNs = 500'000'000;  // workers connect, then start together
constexpr auto kTick = std::chrono::milliseconds(200);
constexpr auto kCatchVictimTimeout = std::chrono::seconds(5);
constexpr auto kWorkerExitGrace = std::chrono::seconds(15);

double seconds_between(std::int64_t from_ns, std::int64_t to_ns) {
  return static_cast<double>(to_ns - from_ns) / 1e9;
}

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

// A private temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "redisync-demo-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw CliError(kExitOsError, "cannot create a temp dir under " +
                                       std::filesystem::temp_directory_path().string());
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Worker {
  int id = 0;
  pid_t pid = -1;
  std::string events;
  bool done = false;
  int exit_code = 0;
  bool killed = false;
};

// SIGKILLs whatever workers are still running when the demo ends early (an exception).
class WorkerSet {
 public:
  ~WorkerSet() {
    for (auto& w : workers) {
      if (!w.done) kill_and_reap(w.pid);
    }
  }
  std::vector<Worker> workers;
};

long long read_counter(Client& client, const DemoKeys& keys) {
  const Reply r = client.execute({"GET", keys.counter});
  return stored_integer(r, "the demo counter '" + keys.counter + "'");
}

// When to kill, counted from the start: midway, but early enough that the lock can recover
// (up to one watchdog lease) and sections run again before the end.
double kill_offset_seconds(double seconds) {
  const double recovery_room = static_cast<double>(kWatchdogMs) / 1000.0 + 1.0;
  return std::max(seconds / 4, std::min(seconds / 2, seconds - recovery_room));
}

class Demo {
 public:
  Demo(const DemoOptions& o, TempDir& dir)
      : o_(o), dir_(dir), keys_(DemoKeys::for_lock(kLockName)) {}

  int run() {
    std::string url = o_.redis_url;
    std::string where;
    if (url.empty()) {
      server_ = EmbeddedServer::start(dir_.path());
      url = server_->url();
      where = "a private redis-server on 127.0.0.1:" + std::to_string(server_->port());
    }
    const Config config = config_from_url(url);
    if (where.empty()) where = config.describe();
    client_.emplace(config);
    client_->execute({"DEL", keys_.lock, keys_.counter, keys_.victim, keys_.holder});
    client_->execute({"SET", keys_.counter, "0"});

    std::cerr << "redisync demo: " << o_.workers << " processes contend for "
              << kind_noun(demo_kind(o_.kind)) << " \"" << kLockName << "\" on " << where << " for "
              << fixed(o_.seconds, 1) << " s\n"
              << "  critical section: GET counter, ~1.5 ms of work, SET counter+1 (not atomic: "
                 "only the lock keeps updates from being lost)\n"
              << "  watchdog lease " << format_duration(Duration{kWatchdogMs})
              << ", renewed every third of it while held\n";

    start_ns_ = monotonic_ns() + kStartDelayNs;
    deadline_ns_ = start_ns_ + static_cast<std::int64_t>(o_.seconds * 1e9);
    spawn_workers(url);
    supervise();
    collect();
    return report();
  }

 private:
  void spawn_workers(const std::string& url) {
    const std::string exe = self_executable();
    // The URL may carry a password: the workers inherit it in the environment, not on their
    // command lines (visible to every user in `ps`).
    if (::setenv(kRedisUrlEnv, url.c_str(), 1) != 0) {
      throw CliError(kExitFailure, "cannot pass the Redis URL to the workers (setenv failed)");
    }
    for (int i = 0; i < o_.workers; ++i) {
      Worker w;
      w.id = i;
      w.events = dir_.path() + "/worker-" + std::to_string(i) + ".events";
      SpawnOptions spawn;
      spawn.close_fds = open_fds();
      w.pid =
          spawn_process(exe,
                        {"redisync", "demo-worker", "--lock", kLockName,
                         "--worker-id", std::to_string(i), "--events", w.events, "--start-at-ns",
                         std::to_string(start_ns_), "--deadline-ns", std::to_string(deadline_ns_),
                         "--watchdog-ms", std::to_string(kWatchdogMs), "--kind", o_.kind},
                        spawn);
      workers_.workers.push_back(w);
    }
  }

  // The run: progress, the kill, the recovery, until the deadline.
  void supervise() {
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    progress_.emplace(std::cerr, tty, o_.seconds);
    const bool want_kill = o_.kill && o_.workers >= 2;
    if (o_.kill && !want_kill) progress_->note("(--kill needs at least 2 workers; no kill)");
    const std::int64_t kill_at =
        start_ns_ + static_cast<std::int64_t>(kill_offset_seconds(o_.seconds) * 1e9);
    std::optional<long long> counter_at_kill;
    bool recovery_noted = false;

    sleep_until_ns(start_ns_);
    for (;;) {
      const std::int64_t now = monotonic_ns();
      const long long counter = read_counter(*client_, keys_);
      progress_->update(seconds_between(start_ns_, now), counter);
      reap_finished();
      if (now >= deadline_ns_) break;
      if (want_kill && !kill_attempted_ && now >= kill_at) {
        kill_attempted_ = true;
        kill_victim();
        if (kill_ns_) counter_at_kill = read_counter(*client_, keys_);
      }
      if (counter_at_kill && !recovery_noted && counter > *counter_at_kill) {
        recovery_noted = true;
        progress_->note("lock free again: sections resumed about " +
                        fixed(seconds_between(*kill_ns_, now) * 1000, 0) +
                        " ms after the kill (exact figure below)");
      }
      std::this_thread::sleep_for(kTick);
    }
  }

  // Has the next worker to enter the critical section stall there (whoever holds the lock
  // next: the lock is not fair, so naming one in advance could wait long), then SIGKILLs it.
  void kill_victim() {
    client_->execute({"DEL", keys_.holder});
    client_->execute({"SET", keys_.victim, kAnyVictim});
    const auto give_up = std::chrono::steady_clock::now() + kCatchVictimTimeout;
    Worker* victim = nullptr;
    while (victim == nullptr) {
      const Reply pid = client_->execute({"GET", keys_.holder});
      for (auto& w : workers_.workers) {
        if (!pid.is_nil() && !w.done && pid.str == std::to_string(w.pid)) victim = &w;
      }
      if (victim != nullptr) break;
      if (std::chrono::steady_clock::now() >= give_up) {
        client_->execute({"DEL", keys_.victim});
        progress_->note("no worker entered its critical section within 5 s; no kill");
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // It announced itself from inside the lock; the lock hash names its owner field.
    const Reply holders = client_->execute({"HGETALL", keys_.lock});
    const std::string owner = holders.elements.empty() ? "?" : holders.elements[0].str;
    ::kill(victim->pid, SIGKILL);
    kill_ns_ = monotonic_ns();
    client_->execute({"DEL", keys_.victim});
    int status = 0;
    reap_within(victim->pid, std::chrono::seconds(5), &status);
    victim->done = true;
    victim->killed = true;
    victim->exit_code = exit_code_of(status);
    progress_->note("killed worker w" + std::to_string(victim->id) + " (pid " +
                    std::to_string(victim->pid) +
                    ") with SIGKILL inside its critical section, after it read the counter; "
                    "the lock (owner " +
                    owner + ") stays held until its " + format_duration(Duration{kWatchdogMs}) +
                    " watchdog lease runs out");
  }

  void reap_finished() {
    for (auto& w : workers_.workers) {
      int status = 0;
      if (!w.done && try_reap(w.pid, &status)) {
        w.done = true;
        w.exit_code = exit_code_of(status);
      }
    }
  }

  void collect() {
    const auto give_up = std::chrono::steady_clock::now() + kWorkerExitGrace;
    for (auto& w : workers_.workers) {
      if (w.done) continue;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          give_up - std::chrono::steady_clock::now());
      int status = 0;
      if (reap_within(w.pid, std::max(left, std::chrono::milliseconds(0)), &status)) {
        w.exit_code = exit_code_of(status);
      } else {
        kill_and_reap(w.pid);
        w.exit_code = -1;
        progress_->note("worker w" + std::to_string(w.id) + " did not finish; killed it");
      }
      w.done = true;
    }
    progress_->finish();
  }

  int report() {
    std::vector<WorkerOutcome> outcomes;
    for (const auto& w : workers_.workers) {
      outcomes.push_back(
          WorkerOutcome{w.id, w.pid, read_sections(w.events), w.killed, w.exit_code});
    }
    const long long counter = read_counter(*client_, keys_);
    const DemoStats st = analyze_demo(outcomes, counter, kill_ns_);
    client_->execute({"DEL", keys_.holder, keys_.victim});

    bool workers_ok = true;
    std::cout << "\nworker  pid      sections   share\n";
    for (std::size_t i = 0; i < outcomes.size(); ++i) {
      const auto& w = outcomes[i];
      char line[160];
      std::snprintf(line, sizeof line, "w%-5d  %-7d  %8zu  %5.1f%%", w.id, w.pid, w.sections.size(),
                    st.share_percent[i]);
      std::cout << line;
      if (w.killed) {
        std::cout << "  killed (SIGKILL inside its critical section)";
      } else if (w.exit_code != 0) {
        std::cout << "  FAILED (exit " << w.exit_code << ")";
        workers_ok = false;
      }
      std::cout << "\n";
    }
    const double even = 100.0 / static_cast<double>(outcomes.size());
    if (outcomes.size() > 1 &&
        *std::min_element(st.share_percent.begin(), st.share_percent.end()) < even / 4) {
      std::cout << "(uneven shares are expected: this lock is not fair; after each release "
                   "every waiter retries and the first to reach Redis wins)\n";
    }

    std::vector<std::pair<std::string, std::string>> rows;
    rows.emplace_back("sections completed", std::to_string(st.sections));
    std::string expected = std::to_string(st.sections);
    if (kill_ns_) expected += " (+1 allowed: the killed worker's unfinished section)";
    rows.emplace_back("counter expected", expected);
    rows.emplace_back("counter actual", std::to_string(counter));
    if (kill_ns_) {
      rows.emplace_back("killed worker's section",
                        st.in_flight_written ? "its write landed before the kill (counted)"
                                             : "never written back (no increment)");
    }
    rows.emplace_back("overlapping sections", std::to_string(st.overlaps));
    if (st.unexplained_increments > 0) {
      rows.emplace_back("unexplained increments", std::to_string(st.unexplained_increments) +
                                                      " (did something else write the counter?)");
    }
    rows.emplace_back("handoff to a waiter p50",
                      st.handoff_p50_us ? fixed(*st.handoff_p50_us, 0) + " µs" : "-");
    rows.emplace_back("handoff to a waiter p99",
                      st.handoff_p99_us ? fixed(*st.handoff_p99_us, 0) + " µs" : "-");
    if (kill_ns_) {
      rows.emplace_back("recovery after kill",
                        st.recovery_ms ? fixed(*st.recovery_ms, 0) + " ms (watchdog lease " +
                                             format_duration(Duration{kWatchdogMs}) + ")"
                                       : "not observed before the end (use --seconds 5 or more)");
    } else if (o_.kill) {
      rows.emplace_back("recovery after kill", "no kill happened");
    }
    std::cout << "\n";
    for (const auto& [k, v] : rows) {
      std::cout << k << std::string(26 - std::min<std::size_t>(k.size(), 25), ' ') << v << "\n";
    }
    std::cout << "lost updates: " << st.lost_updates << std::endl;

    const bool ok =
        st.lost_updates == 0 && st.unexplained_increments == 0 && st.overlaps == 0 && workers_ok;
    return ok ? kExitOk : kExitFailure;
  }

  const DemoOptions& o_;
  TempDir& dir_;
  DemoKeys keys_;
  std::unique_ptr<EmbeddedServer> server_;  // declared before client_: outlives it
  std::optional<Client> client_;
  WorkerSet workers_;
  std::optional<Progress> progress_;
  std::int64_t start_ns_ = 0;
  std::int64_t deadline_ns_ = 0;
  bool kill_attempted_ = false;
  std::optional<std::int64_t> kill_ns_;
};

}  // namespace

CLI::App* add_demo_command(CLI::App& app, DemoOptions& o) {
  CLI::App* demo =
      app.add_subcommand("demo", "Contention and crash demo: N processes, one lock, a SIGKILL");
  demo->footer(
      "Show the lock at work: N processes increment a counter non-atomically under one lock;\n"
      "midway one is SIGKILLed inside its critical section and the watchdog lease (2 s) frees\n"
      "the lock. Ends with a summary; exit 0 if no update was lost. Without --redis it starts\n"
      "a private redis-server (must be installed) on a free loopback port.");
  demo->add_option("--redis", o.redis_url,
                   "Use this Redis instead of a private server (keys redisync:demo*)");
  demo->add_option("--workers", o.workers, "Contending processes")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  demo->add_option("--seconds", o.seconds, "Length of the run")
      ->capture_default_str()
      ->check(CLI::Range(0.5, 3600.0));
  demo->add_option("--kind", o.kind,
                   "Lock kind the workers contend for: " + kind_list(kDemoKinds) +
                       " (a read-write-lock: its write lock)")
      ->capture_default_str();
  demo->add_flag("--kill,!--no-kill", o.kill,
                 "SIGKILL one worker inside its critical section midway (default: on)");
  return demo;
}

int demo_command(const DemoOptions& o) {
  DemoOptions canonical = o;  // the workers get the kind's name, whatever alias was given
  canonical.kind = std::string(kind_name(demo_kind(o.kind)));
  TempDir dir;
  Demo demo(canonical, dir);
  return demo.run();
}

}  // namespace redisync::cli
