// SPDX-License-Identifier: Apache-2.0
// Child processes: fork+exec that is safe in a multi-threaded parent (the Client's I/O thread
// runs while we fork), PATH lookup, exit statuses.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace redisync::cli {

struct SpawnOptions {
  /// Closed in the child before exec: our own descriptors (Redis sockets, signalfd, ...), which
  /// are not close-on-exec. Descriptors the user handed to us stay open.
  std::vector<int> close_fds;
  int stdin_fd = -1;   ///< dup2'ed onto 0 when >= 0
  int stdout_fd = -1;  ///< dup2'ed onto 1 when >= 0
  int stderr_fd = -1;  ///< dup2'ed onto 2 when >= 0
  /// The child's initial signal mask; nullopt = nothing blocked.
  std::optional<sigset_t> signal_mask;
  /// Prefix of the message the child prints when exec fails ("redisync: cannot execute X: ").
  std::string exec_error_prefix;
  /// > 0: the child joins this process group (setpgid, done on both sides of the fork).
  pid_t process_group = -1;
  /// "NAME=value" entries added to (or replacing those of) the current environment.
  std::vector<std::string> extra_env;
};

/// fork + execv of `path` with `argv` (argv[0] included) and the current environment. The
/// child gets PR_SET_PDEATHSIG=SIGKILL, so it dies if this process dies, even by SIGKILL (the
/// signal is tied to the calling thread: call from a thread that lives as long as the child).
/// Between fork and exec the child only makes async-signal-safe calls. If exec fails the child
/// prints the reason and exits 127 (not found) or 126. Throws CliError (exit 71) if fork fails.
pid_t spawn_process(const std::string& path, const std::vector<std::string>& argv,
                    const SpawnOptions& options);

/// The executable `name` resolves to: itself if it contains '/', else the first executable
/// match in $PATH. Empty if there is none.
std::string find_executable(const std::string& name);

/// The descriptors >= 3 open in this process now (from /proc/self/fd).
std::vector<int> open_fds();

/// The elements of `now` not in `before`.
std::vector<int> fds_opened_since(const std::vector<int>& before, const std::vector<int>& now);

/// A waitpid() status as a shell would report it: the exit code, or 128 + signal number.
int exit_code_of(int wait_status);

/// Non-blocking reap: true (and the status) if `pid` has exited.
bool try_reap(pid_t pid, int* status);

/// Waits up to `limit` for `pid` to exit; true (and the status) if it was reaped.
bool reap_within(pid_t pid, std::chrono::milliseconds limit, int* status);

/// SIGKILL + reap (no-op for pid <= 0).
void kill_and_reap(pid_t pid);

/// This program's own executable (/proc/self/exe resolved), to start helper copies of it.
std::string self_executable();

/// "SIGTERM", "SIGKILL", ... or "signal N".
std::string signal_name(int signo);

}  // namespace redisync::cli
