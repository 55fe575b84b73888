#include "process_group.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "cli_error.h"

namespace redisync::cli {
namespace {

// The watcher, between fork and _exit: async-signal-safe calls only.
[[noreturn]] void watch(int read_fd, const std::vector<int>& close_fds) {
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
  for (;;) {
    char c = 0;
    const ssize_t n = ::read(read_fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n == 1 && c == 'q') ::_exit(0);
    if (n == 1) continue;
    // EOF (or a read error): `run` is gone. Take the whole group along, ourselves included.
    ::kill(0, SIGKILL);
    ::_exit(1);
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

ProcessGroup::ProcessGroup(const std::vector<int>& close_in_watcher) {
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
  if (pid == 0) watch(fds[0], close_fds);
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

void ProcessGroup::dismiss() {
  restore_terminal();
  if (pipe_write_ >= 0) {
    // The watcher may be dead already (a SIGKILL to the group after a lost lock): writing
    // would raise SIGPIPE. Block it for this write and take back the one it raised.
    sigset_t pipe_signal;
    sigset_t old;
    sigemptyset(&pipe_signal);
    sigaddset(&pipe_signal, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_signal, &old);
    const char q = 'q';
    ssize_t n = 0;
    while ((n = ::write(pipe_write_, &q, 1)) < 0 && errno == EINTR) {
    }
    if (n < 0 && errno == EPIPE) {
      const timespec none{};
      ::sigtimedwait(&pipe_signal, nullptr, &none);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
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
