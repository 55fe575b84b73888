#include "run_command.h"

#include <signal.h>
#include <sys/signalfd.h>

#include <asio/use_future.hpp>
#include <chrono>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>

#include "cli_error.h"
#include "duration.h"
#include "metrics_option.h"
#include "process.h"
#include "redis_option.h"
#include "redisync/client.h"
#include "redisync/errors.h"
#include "redisync/lock.h"
#include "signals.h"

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

struct Settings {
  std::optional<Duration> wait;  // nullopt: forever
  Duration lease{0};             // 0: watchdog
  std::string executable;
};

Settings parse_settings(const RunOptions& o, Config& config) {
  Settings s;
  if (o.command.empty()) {
    throw UsageError("run: missing the command to run (usage: redisync run NAME -- CMD ARGS...)");
  }
  if (o.name.empty()) throw UsageError("run: the lock NAME must not be empty");
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
  s.executable = find_executable(o.command[0]);
  if (s.executable.empty()) throw CliError(kExitNotFound, o.command[0] + ": command not found");
  return s;
}

std::string lease_text(const Settings& s, const Config& config) {
  return s.lease > Duration{0}
             ? "fixed lease " + format_duration(s.lease)
             : "watchdog lease " + format_duration(config.lock_watchdog_timeout) + ", renewed";
}

// Drops our hold; true if it was released, false if it turned out lost. Connection problems
// are reported and count as released (the lease frees the lock).
bool release(Lock& lock, std::int64_t owner, std::string* lost_reason) {
  try {
    lock.async_unlock(owner, asio::use_future).get();
    return true;
  } catch (const LockLostError&) {
    *lost_reason = "its lease ran out or the key was removed before the command finished";
  } catch (const NotOwnerError&) {
    *lost_reason = "it was no longer held by this process when the command finished";
  } catch (const std::exception& e) {
    print_diagnostic("could not release lock " + lock.name() + " (it frees itself when its lease " +
                     "runs out): " + e.what());
    return true;
  }
  return false;
}

class Runner {
 public:
  Runner(const RunOptions& options, Config config, Settings settings)
      : options_(options),
        config_(std::move(config)),
        settings_(std::move(settings)),
        inherited_fds_(open_fds()),
        // Before the Client exists: its I/O thread must inherit the blocked mask.
        signals_({SIGINT, SIGTERM, SIGHUP, SIGCHLD}),
        shared_(std::make_shared<Shared>()),
        client_(config_),
        lock_(client_.lock(options.name)),
        owner_(Client::new_owner_id()) {
    client_.on_lock_lost(
        [shared = shared_, name = options.name, owner = owner_](const LockLostEvent& e) {
          if (e.name != name || e.owner != owner) return;
          {
            std::lock_guard guard(shared->mutex);
            shared->lost = true;
            shared->lost_reason = e.reason.empty() ? "lease expired or key removed" : e.reason;
          }
          shared->wake.notify();
        });
  }

  int run() {
    const auto started = SteadyClock::now();
    if (const auto interrupted = acquire()) return *interrupted;
    if (options_.verbose) {
      const auto waited = std::chrono::duration_cast<Duration>(SteadyClock::now() - started);
      print_diagnostic("acquired lock " + options_.name + " on " + config_.describe() + " after " +
                       format_duration(waited) + " (" + lease_text(settings_, config_) + ")");
    }
    pid_t child = -1;
    try {
      SpawnOptions spawn;
      spawn.close_fds = fds_opened_since(inherited_fds_, open_fds());
      spawn.signal_mask = signals_.original_mask();
      spawn.exec_error_prefix = "redisync: cannot execute " + options_.command[0] + ": ";
      child = spawn_process(settings_.executable, options_.command, spawn);
    } catch (...) {
      std::string ignored;
      release(lock_, owner_, &ignored);
      throw;
    }
    const int status = supervise(child);
    if (lost_) return kExitLockLost;

    std::string reason;
    {
      std::lock_guard guard(shared_->mutex);
      if (shared_->lost) reason = shared_->lost_reason;
    }
    // A fixed lease may have run out while the command ran: release() then reports it lost.
    if (reason.empty()) release(lock_, owner_, &reason);
    if (!reason.empty()) {
      print_diagnostic("lock " + options_.name + " lost: " + reason);
      return kExitLockLost;
    }
    if (options_.verbose) print_diagnostic("released lock " + options_.name);
    return exit_code_of(status);
  }

 private:
  // Starts the acquisition and waits for it or for a terminating signal. Returns an exit
  // code if we must stop (interrupted), nullopt once the lock is held. Throws on errors.
  std::optional<int> acquire() {
    auto shared = shared_;
    Lock lock = lock_;
    const std::int64_t owner = owner_;
    auto done = [shared, lock, owner](std::exception_ptr error, bool acquired) mutable {
      bool abandoned = false;
      {
        std::lock_guard guard(shared->mutex);
        shared->acquire_done = true;
        shared->acquired = acquired && !error;
        shared->acquire_error = error;
        abandoned = shared->abandoned;
      }
      // Nobody will run the command any more: give the lock back at once.
      if (abandoned && acquired && !error) lock.async_unlock(owner, [](std::exception_ptr) {});
      shared->wake.notify();
    };
    if (settings_.wait) {
      lock_.async_try_lock(owner_, *settings_.wait, settings_.lease, done);
    } else {
      lock_.async_lock(owner_, settings_.lease,
                       [done](std::exception_ptr error) mutable { done(error, !error); });
    }

    for (;;) {
      const auto ready = wait_readable({shared_->wake.fd(), signals_.fd()}, -1);
      if (ready[0]) {
        shared_->wake.drain();
        std::unique_lock guard(shared_->mutex);
        if (shared_->acquire_done) {
          if (shared_->acquire_error) std::rethrow_exception(shared_->acquire_error);
          if (!shared_->acquired) {
            throw CliError(kExitNotAcquired, "lock " + options_.name + " not acquired within " +
                                                 format_duration(*settings_.wait) +
                                                 " (held by someone else)");
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
            release(lock_, owner_, &ignored);
          }
          print_diagnostic("interrupted by " + signal_name(signo) + " while waiting for lock " +
                           options_.name);
          return 128 + signo;
        }
      }
    }
  }

  // Waits for the child, forwarding signals and reacting to a lost lock. Returns its status.
  int supervise(pid_t child) {
    std::optional<SteadyClock::time_point> kill_at;
    for (;;) {
      int status = 0;
      if (try_reap(child, &status)) return status;
      int timeout_ms = -1;
      if (kill_at) {
        const auto left =
            std::chrono::ceil<std::chrono::milliseconds>(*kill_at - SteadyClock::now());
        timeout_ms = static_cast<int>(std::max<long long>(0, left.count()));
      }
      const auto ready = wait_readable({shared_->wake.fd(), signals_.fd()}, timeout_ms);
      if (ready[0]) {
        shared_->wake.drain();
        std::string reason;
        {
          std::lock_guard guard(shared_->mutex);
          if (shared_->lost && !lost_) reason = shared_->lost_reason;
        }
        if (!reason.empty()) {
          lost_ = true;
          print_diagnostic("lock " + options_.name + " lost: " + reason);
          ::kill(child, SIGTERM);
          kill_at = SteadyClock::now() + kLostGrace;
        }
      }
      if (ready[1]) {
        for (const auto& info : signals_.read_pending()) {
          const int signo = static_cast<int>(info.ssi_signo);
          if (signo == SIGCHLD) continue;
          // A terminal's ^C / hangup goes to the whole foreground process group, the child
          // included; forwarding it again would deliver it twice.
          if (info.ssi_code == SI_KERNEL) continue;
          ::kill(child, signo);
        }
      }
      if (kill_at && SteadyClock::now() >= *kill_at) {
        print_diagnostic("command did not exit within " + std::to_string(kLostGrace.count()) +
                         " s of SIGTERM; sending SIGKILL");
        ::kill(child, SIGKILL);
        kill_at.reset();
      }
    }
  }

  const RunOptions& options_;
  Config config_;
  Settings settings_;
  std::vector<int> inherited_fds_;
  SignalFd signals_;
  std::shared_ptr<Shared> shared_;
  Client client_;
  Lock lock_;
  std::int64_t owner_;
  bool lost_ = false;
};

}  // namespace

CLI::App* add_run_command(CLI::App& app, RunOptions& o) {
  CLI::App* run = app.add_subcommand("run", "Run a command while holding a lock");
  run->footer(
      "Run a command while holding a lock: acquire NAME, run CMD, release when it exits.\n"
      "The lock's lease is renewed while CMD runs. Exit status: CMD's (128+signal if it was\n"
      "killed); 75 not acquired within --wait; 76 lock lost while CMD ran (CMD gets SIGTERM,\n"
      "SIGKILL 5 s later); 69 Redis unreachable; 64 usage error; 127 CMD not found.\n\n"
      "Example: redisync run --wait 10s nightly-report -- ./make-report.sh --full");
  add_redis_option(*run, o.redis_url);
  run->add_option("--wait", o.wait,
                  "How long to wait for the lock: 0 = one try; default: forever. "
                  "Durations: 250ms, 30s, 5m, bare number = ms");
  run->add_option("--lease", o.lease,
                  "Fixed lease, never renewed (default: watchdog lease, renewed while CMD runs). "
                  "If CMD outlives it, others may take the lock meanwhile and run exits 76");
  run->add_option("--watchdog-timeout", o.watchdog_timeout,
                  "Watchdog lease, renewed every third of it (default 30s)");
  run->add_flag("-v,--verbose", o.verbose, "Print acquire/release lines on stderr");
  add_metrics_option(*run, o.metrics_listen);  // metrics_option.h
  run->add_option("name", o.name, "Lock name")->required();
  run->add_option("command", o.command, "-- CMD ARGS...: the command to run");
  return run;
}

int run_command(const RunOptions& options) {
  Config config = config_from_url(options.redis_url);
  Settings settings = parse_settings(options, config);
  const auto metrics = metrics_sink(options.metrics_listen, config);  // metrics_option.h
  Runner runner(options, std::move(config), std::move(settings));
  serve_metrics(metrics);  // after the Runner blocked its signals: threads inherit the mask
  return runner.run();
}

}  // namespace redisync::cli
