// SPDX-License-Identifier: Apache-2.0
#include "process_group.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "cli_error.h"
#include "clock.h"

namespace redisync::cli {
namespace {

constexpr std::size_t kMessageSize = 9;  // a letter and an int64 (CLOCK_MONOTONIC ns)

// The watcher, between fork and _exit: async-signal-safe calls only (read, poll,
// clock_gettime, kill).
[[noreturn]] void watch(int read_fd, const std::vector<int>& close_fds, std::int64_t grace_ns) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_NAME, "redisync-watch");  // for ps / top
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGTSTP, SIGTTIN, SIGTTOU, SIGPIPE, SIGUSR1,
                  SIGUSR2}) {
    ::sigaction(sig, &ignore, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int fd : close_fds) {
    if (fd != read_fd) ::close(fd);
  }
  // stdin/stdout/stderr: the watcher reads and writes nothing; do not keep a pipe of the
  // caller's open (someone reading run's output would wait for the watcher too).
  const int devnull = ::open("/dev/null", O_RDWR);
  if (devnull >= 0) {
    for (int fd = 0; fd <= 2; ++fd) ::dup2(devnull, fd);
    if (devnull > 2) ::close(devnull);
  }
  constexpr std::int64_t kNone = -1;
  std::int64_t deadline = kNone;  // end the command at this time, unless moved first
  std::int64_t kill_at = kNone;   // after ending it: SIGKILL the group at this time
  char message[kMessageSize];
  std::size_t have = 0;
  for (;;) {
    const std::int64_t next = kill_at != kNone ? kill_at : deadline;
    int timeout_ms = -1;
    if (next != kNone) {
      const std::int64_t left = next - monotonic_ns();
      timeout_ms =
          left <= 0
              ? 0
              : static_cast<int>(std::min<std::int64_t>((left + 999'999) / 1'000'000, 60'000));
    }
    pollfd p{read_fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, timeout_ms);
    if (ready < 0 && errno != EINTR) {
      ::kill(0, SIGKILL);
      ::_exit(1);
    }
    if (ready > 0) {
      const ssize_t n = ::read(read_fd, message + have, kMessageSize - have);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        // EOF (or a read error): `run` is gone. Take the whole group along, ourselves included.
        ::kill(0, SIGKILL);
        ::_exit(1);
      }
      have += static_cast<std::size_t>(n);
      if (have == kMessageSize) {
        have = 0;
        std::int64_t ns = 0;
        std::memcpy(&ns, message + 1, sizeof ns);
        if (message[0] == 'q') ::_exit(0);
        if (kill_at == kNone) deadline = message[0] == 'd' ? ns : kNone;
      }
    }
    const std::int64_t now = monotonic_ns();
    if (kill_at == kNone && deadline != kNone && now >= deadline) {
      // `run` did not move the deadline in time: it cannot act, so do what it would do on
      // a lost lock. SIGCONT: a stopped command must run to receive the SIGTERM.
      ::kill(0, SIGTERM);
      ::kill(0, SIGCONT);
      kill_at = now + grace_ns;
    } else if (kill_at != kNone && now >= kill_at) {
      ::kill(0, SIGKILL);
      ::_exit(1);
    }
  }
}

}  // namespace

bool set_foreground(int tty, pid_t pgrp) {
  sigset_t ttou;
  sigset_t old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  pthread_sigmask(SIG_BLOCK, &ttou, &old);
  const bool ok = ::tcsetpgrp(tty, pgrp) == 0;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

ProcessGroup::ProcessGroup(const std::vector<int>& close_in_watcher,
                           std::chrono::milliseconds lost_grace) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw CliError(kExitOsError, "pipe failed: " + std::string(std::strerror(errno)));
  }
  std::vector<int> close_fds = close_in_watcher;
  close_fds.push_back(fds[1]);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw CliError(kExitOsError, "fork failed: " + std::string(std::strerror(err)));
  }
  if (pid == 0) {
    watch(fds[0], close_fds,
          std::chrono::duration_cast<std::chrono::nanoseconds>(lost_grace).count());
  }
  ::close(fds[0]);
  // Both sides set the group, so it exists before the command is spawned into it.
  ::setpgid(pid, pid);
  watcher_ = pid;
  pipe_write_ = fds[1];
}

ProcessGroup::~ProcessGroup() { dismiss(); }

void ProcessGroup::signal(int signo) const {
  if (watcher_ > 0) ::kill(-watcher_, signo);
}

void ProcessGroup::set_deadline(std::optional<std::chrono::steady_clock::time_point> deadline) {
  // steady_clock is CLOCK_MONOTONIC (libstdc++), the watcher's clock.
  if (deadline) {
    tell_watcher(
        'd',
        std::chrono::duration_cast<std::chrono::nanoseconds>(deadline->time_since_epoch()).count());
  } else {
    tell_watcher('n', 0);
  }
}

bool ProcessGroup::tell_watcher(char what, std::int64_t ns) {
  if (pipe_write_ < 0) return false;
  char message[kMessageSize];
  message[0] = what;
  std::memcpy(message + 1, &ns, sizeof ns);
  // The watcher may be dead already (a SIGKILL to the group after a lost lock): writing
  // would raise SIGPIPE. Block it for this write and take back the one it raised.
  sigset_t pipe_signal;
  sigset_t old;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &old);
  ssize_t n = 0;
  // One write of less than PIPE_BUF bytes: the watcher reads whole messages.
  while ((n = ::write(pipe_write_, message, sizeof message)) < 0 && errno == EINTR) {
  }
  if (n < 0 && errno == EPIPE) {
    const timespec none{};
    ::sigtimedwait(&pipe_signal, nullptr, &none);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return n == static_cast<ssize_t>(sizeof message);
}

void ProcessGroup::dismiss() {
  restore_terminal();
  if (pipe_write_ >= 0) {
    tell_watcher('q', 0);
    ::close(pipe_write_);
    pipe_write_ = -1;
  }
  if (watcher_ > 0) {
    int status = 0;
    while (::waitpid(watcher_, &status, 0) < 0 && errno == EINTR) {
    }
    watcher_ = -1;
  }
  if (tty_ >= 0) {
    ::close(tty_);
    tty_ = -1;
  }
}

void ProcessGroup::take_terminal() {
  if (watcher_ <= 0) return;
  if (tty_ < 0) {
    tty_ = ::open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
    if (tty_ < 0) return;
  }
  if (::tcgetpgrp(tty_) != ::getpgrp()) return;  // not in the foreground: leave it alone
  gave_terminal_ = set_foreground(tty_, watcher_);
}

void ProcessGroup::restore_terminal() {
  if (tty_ < 0 || !gave_terminal_) return;
  set_foreground(tty_, ::getpgrp());
  gave_terminal_ = false;
}

}  // namespace redisync::cli
