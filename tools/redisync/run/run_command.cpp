// SPDX-License-Identifier: Apache-2.0
#include "run_command.h"

#include <dirent.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <asio/use_future.hpp>
#include <chrono>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "cli_error.h"
#include "duration.h"
#include "metrics_option.h"
#include "process.h"
#include "process_group.h"
#include "redis_option.h"
#include "redisync/client.h"
#include "redisync/errors.h"
#include "run_holding.h"
#include "run_settings.h"
#include "signals.h"
#include "watch_deadline.h"

namespace redisync::cli {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Grace period between SIGTERM and SIGKILL when the lock is lost.
constexpr auto kLostGrace = std::chrono::seconds(5);

// What the Client's I/O thread reports to the main thread. Callbacks only store the news and
// poke `wake`; the main thread acts on it.
struct Shared {
  std::mutex mutex;
  bool acquire_done = false;
  bool acquired = false;
  std::exception_ptr acquire_error;
  bool abandoned = false;  // the main thread gave up waiting (signal)
  bool lost = false;
  std::string lost_reason;
  EventFd wake;
};

std::string lease_text(const RunSettings& s, const Config& config) {
  return s.lease > Duration{0}
             ? "fixed lease " + format_duration(s.lease)
             : "watchdog lease " + format_duration(config.lock_watchdog_timeout) + ", renewed";
}

// Blocking release: true if released, false (with the reason) if it turned out lost.
// Connection problems are reported and count as released (the lease frees the lock).
bool release(Holding& holding, std::string* lost_reason) {
  std::promise<std::exception_ptr> done;
  auto result = done.get_future();
  holding.start_release([&done](std::exception_ptr e) { done.set_value(e); });
  const std::exception_ptr error = result.get();
  if (!error) return true;
  if (is_lost_error(error)) {
    *lost_reason = "it was no longer held when the command finished (its lease ran out or it "
                   "was removed)";
    return false;
  }
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    print_diagnostic("could not release " + holding.describe() +
                     " (it frees itself when its lease runs out): " + e.what());
  }
  return true;
}

// Processes other than `except` whose process group is `pgid` (from /proc).
bool group_has_members(pid_t pgid, pid_t except) {
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return false;
  bool found = false;
  while (const dirent* entry = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || pid == except) continue;
    std::ifstream stat("/proc/" + std::string(entry->d_name) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto paren = line.rfind(')');
    if (paren == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    long pgrp = 0;
    if (std::sscanf(line.c_str() + paren + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3) continue;
    if (pgrp == pgid && state != 'Z') {
      found = true;
      break;
    }
  }
  ::closedir(dir);
  return found;
}

class Runner {
 public:
  Runner(const RunOptions& options, Config config, RunSettings settings)
      : options_(options),
        config_(std::move(config)),
        settings_(std::move(settings)),
        inherited_fds_(open_fds()),
        // Before the Client exists: its I/O thread must inherit the blocked mask.
        signals_({SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}),
        shared_(std::make_shared<Shared>()),
        client_(config_),
        owner_(Client::new_owner_id()),
        holding_(make_holding(client_, settings_.hold, owner_)) {
    // Every lock kind writes our owner id; the owner id is fresh and ours alone.
    client_.on_lock_lost([shared = shared_, owner = owner_](const LockLostEvent& e) {
      if (e.owner != owner) return;
      {
        std::lock_guard guard(shared->mutex);
        if (!shared->lost) {
          shared->lost = true;
          shared->lost_reason = e.reason.empty() ? "lease expired or key removed" : e.reason;
        }
      }
      shared->wake.notify();
    });
  }

  int run() {
    holding_->prepare();
    const auto started = SteadyClock::now();
    if (const auto interrupted = acquire()) return *interrupted;
    holding_->after_acquire();
    if (options_.verbose) {
      const auto waited = std::chrono::duration_cast<Duration>(SteadyClock::now() - started);
      print_diagnostic("acquired " + holding_->describe() + " on " + config_.describe() +
                       " after " + format_duration(waited) + " (" +
                       lease_text(settings_, config_) + ")");
    }
    std::optional<ProcessGroup> group;
    pid_t child = -1;
    try {
      const auto ours = fds_opened_since(inherited_fds_, open_fds());
      group.emplace(ours, kLostGrace);
      forward_deadline(*group);  // guarded from the start
      group->take_terminal();
      SpawnOptions spawn;
      spawn.close_fds = fds_opened_since(inherited_fds_, open_fds());
      spawn.signal_mask = signals_.original_mask();
      spawn.exec_error_prefix = "redisync: cannot execute " + options_.command[0] + ": ";
      spawn.process_group = group->id();
      spawn.extra_env = holding_->environment();
      child = spawn_process(settings_.executable, options_.command, spawn);
    } catch (...) {
      group.reset();
      std::string ignored;
      release(*holding_, &ignored);
      throw;
    }
    const int status = supervise(child, *group);
    if (lost_) {
      finish_group_after_loss(*group);
      return kExitLockLost;
    }
    group->dismiss();  // what the command left running in the background stays (as flock)

    std::string reason = lost_reason();
    // A fixed lease may have run out while the command ran: release() then reports it lost.
    if (reason.empty()) release(*holding_, &reason);
    if (!reason.empty()) {
      print_diagnostic(holding_->describe() + " lost: " + reason);
      return kExitLockLost;
    }
    if (options_.verbose) print_diagnostic("released " + holding_->describe());
    return exit_code_of(status);
  }

 private:
  std::string lost_reason() {
    std::lock_guard guard(shared_->mutex);
    return shared_->lost ? shared_->lost_reason : std::string();
  }

  // Starts the acquisition and waits for it or for a terminating signal. Returns an exit
  // code if we must stop (interrupted), nullopt once the lock is held. Throws on errors.
  std::optional<int> acquire() {
    auto done = [shared = shared_, holding = holding_](std::exception_ptr error,
                                                       bool acquired) mutable {
      bool abandoned = false;
      {
        std::lock_guard guard(shared->mutex);
        shared->acquire_done = true;
        shared->acquired = acquired && !error;
        shared->acquire_error = error;
        abandoned = shared->abandoned;
      }
      // Nobody will run the command any more: give the lock back at once.
      if (abandoned && acquired && !error) holding->start_release([](std::exception_ptr) {});
      shared->wake.notify();
    };
    holding_->start_acquire(settings_.wait, settings_.lease, done);

    for (;;) {
      const auto ready = wait_readable({shared_->wake.fd(), signals_.fd()}, -1);
      if (ready[0]) {
        shared_->wake.drain();
        std::unique_lock guard(shared_->mutex);
        if (shared_->acquire_done) {
          if (shared_->acquire_error) std::rethrow_exception(shared_->acquire_error);
          if (!shared_->acquired) {
            guard.unlock();
            not_acquired();
          }
          return std::nullopt;
        }
      }
      if (ready[1]) {
        for (const auto& info : signals_.read_pending()) {
          const int signo = static_cast<int>(info.ssi_signo);
          if (signo == SIGCHLD) continue;
          bool held = false;
          {
            std::lock_guard guard(shared_->mutex);
            shared_->abandoned = true;
            held = shared_->acquire_done && shared_->acquired;
          }
          if (held) {
            std::string ignored;
            release(*holding_, &ignored);
          }
          print_diagnostic("interrupted by " + signal_name(signo) + " while waiting for " +
                           holding_->describe());
          return 128 + signo;
        }
      }
    }
  }

  // The wait ended without the lock. The library says "not acquired" also when every
  // attempt failed to reach Redis (a timed acquire that could not get through): exit 75
  // "held by someone else" would pass an outage off as contention. A PING tells them apart:
  // ConnectionError / TimeoutError propagate (exit 69); any answer, even an error (an ACL
  // user without +ping), means Redis is there.
  [[noreturn]] void not_acquired() {
    const std::string what =
        holding_->describe() + " not acquired within " + format_duration(*settings_.wait);
    try {
      client_.execute({"PING"});
    } catch (const ServerError&) {
    }
    int code = kExitFailure;
    if (const std::string why = holding_->why_not_acquired(&code); !why.empty()) {
      throw CliError(code, what + ":\n" + why);
    }
    throw CliError(kExitNotAcquired, what + " (held by someone else)");
  }

  void lose(const std::string& reason, ProcessGroup& group,
            std::optional<SteadyClock::time_point>& kill_at) {
    if (lost_) return;
    lost_ = true;
    group.set_deadline(std::nullopt);  // we end the command ourselves: one SIGTERM, not two
    lost_at_ = SteadyClock::now();
    print_diagnostic(holding_->describe() + " lost: " + reason);
    group.signal(SIGTERM);
    kill_at = SteadyClock::now() + kLostGrace;
  }

  // The lease of the hold: the fixed --lease, else the watchdog's.
  Duration lease() const {
    return settings_.lease > Duration{0} ? settings_.lease : config_.lock_watchdog_timeout;
  }

  // Hands the watcher the time by which the hold must have been renewed (Client::
  // lease_deadline(): the moment the library would report it lost), and nothing later
  // (watch_deadline.h). If we stop running (SIGSTOP, ^Z, hung), the watcher ends the command
  // then: before the lease can end on the server, whatever lease the hold has there (a
  // freshly granted one has the releaser's grant lease, not ours). While we run, our own lost
  // notice comes at about the same time; lose() then takes the deadline back, and the command
  // may see SIGTERM twice if the watcher's came first.
  void forward_deadline(ProcessGroup& group) {
    if (lost_) return;
    const auto deadline = watcher_deadline(client_.lease_deadline());
    if (deadline == forwarded_deadline_) return;
    forwarded_deadline_ = deadline;
    group.set_deadline(deadline);
  }

  // The command stopped (^Z at the terminal, which it owns): stop too, so the shell gets the
  // terminal back; on SIGCONT give it back to the command's group and continue it. While we
  // are stopped nothing renews the lease: the watcher ends the command if it runs out.
  void follow_stop(ProcessGroup& group) {
    if (!group.has_terminal()) return;  // stopped by someone else: it keeps the lock
    forward_deadline(group);
    group.restore_terminal();
    ::kill(::getpid(), SIGSTOP);
    // Continued: in the foreground again (fg) or in the background (bg)?
    group.take_terminal();
    group.signal(SIGCONT);
  }

  // Waits for the child, forwarding signals to its group and reacting to a lost lock.
  int supervise(pid_t child, ProcessGroup& group) {
    std::optional<SteadyClock::time_point> kill_at;
    for (;;) {
      int status = 0;
      const pid_t r = ::waitpid(child, &status, WNOHANG | WUNTRACED);
      if (r == child && WIFSTOPPED(status)) {
        follow_stop(group);
        continue;
      }
      if (r == child) return status;
      forward_deadline(group);
      const auto now = SteadyClock::now();
      std::optional<SteadyClock::time_point> next = kill_at;
      if (!lost_) {
        const auto check = now + deadline_check_period(lease(), forwarded_deadline_, now);
        next = next ? std::min(*next, check) : check;
      }
      if (const auto renewal = holding_->next_renewal(); renewal && !lost_) {
        next = next ? std::min(*next, *renewal) : *renewal;
      }
      int timeout_ms = -1;
      if (next) {
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(*next - now);
        timeout_ms = static_cast<int>(std::max<long long>(0, left.count()));
      }
      const auto ready = wait_readable({shared_->wake.fd(), signals_.fd()}, timeout_ms);
      if (ready[0]) {
        shared_->wake.drain();
        if (const std::string reason = lost_reason(); !reason.empty()) {
          lose(reason, group, kill_at);
        }
      }
      if (const auto renewal = holding_->next_renewal();
          !lost_ && renewal && SteadyClock::now() >= *renewal) {
        if (const std::string reason = holding_->renew(); !reason.empty()) {
          lose(reason, group, kill_at);
        }
      }
      if (ready[1]) {
        for (const auto& info : signals_.read_pending()) {
          const int signo = static_cast<int>(info.ssi_signo);
          if (signo == SIGCHLD) continue;
          group.signal(signo);  // the command and what it started (the watcher ignores it)
        }
      }
      if (kill_at && SteadyClock::now() >= *kill_at) {
        print_diagnostic("command did not exit within " + std::to_string(kLostGrace.count()) +
                         " s of SIGTERM; sending SIGKILL to its process group");
        group.signal(SIGKILL);
        kill_at.reset();
      }
    }
  }

  // After a loss the command has exited; what it started may still run. They had SIGTERM
  // with the command: wait out the rest of the grace period for them, then SIGKILL the group.
  void finish_group_after_loss(ProcessGroup& group) {
    const auto deadline = lost_at_ + kLostGrace;
    while (SteadyClock::now() < deadline && group_has_members(group.id(), group.id())) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    group.signal(SIGKILL);
    group.dismiss();
  }

  const RunOptions& options_;
  Config config_;
  RunSettings settings_;
  std::vector<int> inherited_fds_;
  SignalFd signals_;
  std::shared_ptr<Shared> shared_;
  Client client_;
  std::int64_t owner_;
  std::shared_ptr<Holding> holding_;
  bool lost_ = false;
  SteadyClock::time_point lost_at_{};
  std::optional<SteadyClock::time_point> forwarded_deadline_;  // what the watcher was told
};

}  // namespace

int run_command(const RunOptions& options) {
  Config config = config_from_url(options.redis_url);
  RunSettings settings = parse_run_settings(options, config);
  const auto metrics = metrics_sink(options.metrics_listen, config);  // metrics_option.h
  Runner runner(options, std::move(config), std::move(settings));
  serve_metrics(metrics);  // after the Runner blocked its signals: threads inherit the mask
  return runner.run();
}

}  // namespace redisync::cli
