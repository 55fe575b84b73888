// SPDX-License-Identifier: Apache-2.0
// The process group `redisync run` puts its command in, so that signals reach the command's own
// children too (a shell script's workers), and a watcher that takes the whole group down when
// `run` dies, even by SIGKILL.
//
// Design: before the command starts, `run` forks a *watcher*: a copy of itself that makes a new
// process group (it is its leader; the command joins it), ignores terminal and termination
// signals, closes every descriptor but the read end of a pipe whose only write end `run` holds,
// and blocks reading it. When `run` dies, the kernel closes that write end, the watcher reads
// EOF and SIGKILLs its whole group (itself included). When the command has finished normally,
// `run` writes "q" and the watcher exits without touching anything. A parent-death signal
// alone (PR_SET_PDEATHSIG) reaches only the direct child; the pipe reaches the group.
// The watcher being a member keeps the group id alive (never reused) as long as it lives.
//
// The watcher also guards the lease when `run` cannot: `run` passes it the time by which the
// hold must be renewed (set_deadline, after each confirmed renewal). If that time comes and
// goes (`run` stopped by SIGSTOP, or hung, while the command runs on), the watcher ends the
// command as `run` would on a lost lock: SIGTERM (and SIGCONT, so that a stopped command gets
// it), SIGKILL after the grace period. Messages on the pipe are 9 bytes: a letter and a
// CLOCK_MONOTONIC time in ns ('d' deadline, 'n' none, 'q' quit).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <vector>

namespace redisync::cli {

class ProcessGroup {
 public:
  /// Starts the watcher. `close_in_watcher`: our own descriptors (Redis sockets, signalfd...)
  /// the watcher closes at once. `lost_grace`: how long after its SIGTERM the watcher
  /// SIGKILLs the group when a deadline passed. Throws CliError (exit 71) if pipe or fork fails.
  ProcessGroup(const std::vector<int>& close_in_watcher, std::chrono::milliseconds lost_grace);
  /// dismiss() if not done yet.
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  /// The group id (the watcher's pid): pass to spawn_process as SpawnOptions::process_group.
  pid_t id() const { return watcher_; }
  /// kill(-id, signo): the command and everything it started that stayed in its group.
  void signal(int signo) const;
  /// The watcher ends the command (SIGTERM, SIGCONT; SIGKILL after the grace period) if
  /// `deadline` passes before another set_deadline(); nullopt: no deadline.
  void set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline);
  /// Lets the watcher exit without killing anything, and reaps it (also after it died of a
  /// SIGKILL sent to the group).
  void dismiss();

  /// The controlling terminal, when this process's group is its foreground group (an
  /// interactive shell ran us): hands the terminal to the command's group so the command
  /// can read it and gets ^C / ^Z itself. restore_terminal() takes it back. No-op otherwise.
  void take_terminal();
  void restore_terminal();
  /// True while the command's group has the terminal.
  bool has_terminal() const { return tty_ >= 0 && gave_terminal_; }

 private:
  /// Sends one 9-byte message; false if the watcher is gone.
  bool tell_watcher(char what, std::int64_t ns);

  pid_t watcher_ = -1;
  int pipe_write_ = -1;
  int tty_ = -1;
  bool gave_terminal_ = false;
};

/// Calls tcsetpgrp(tty, pgrp) with SIGTTOU blocked in the calling thread (needed when the
/// caller is in a background group). False on failure.
bool set_foreground(int tty, pid_t pgrp);

}  // namespace redisync::cli
