// SPDX-License-Identifier: Apache-2.0
#include "signals.h"

#include <errno.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "cli_error.h"

namespace redisync::cli {

SignalFd::SignalFd(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, &original_);
  fd_ = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    pthread_sigmask(SIG_SETMASK, &original_, nullptr);
    throw CliError(kExitOsError, "signalfd failed: " + std::string(std::strerror(err)));
  }
}

SignalFd::~SignalFd() {
  // Signals still pending would take their default action (e.g. terminate) once unblocked.
  read_pending();
  ::close(fd_);
  pthread_sigmask(SIG_SETMASK, &original_, nullptr);
}

std::vector<signalfd_siginfo> SignalFd::read_pending() {
  std::vector<signalfd_siginfo> out;
  for (;;) {
    signalfd_siginfo info{};
    const ssize_t n = ::read(fd_, &info, sizeof info);
    if (n == static_cast<ssize_t>(sizeof info)) {
      out.push_back(info);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return out;
  }
}

EventFd::EventFd() {
  fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd_ < 0) {
    throw CliError(kExitOsError, "eventfd failed: " + std::string(std::strerror(errno)));
  }
}

EventFd::~EventFd() { ::close(fd_); }

void EventFd::notify() {
  const std::uint64_t one = 1;
  while (::write(fd_, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

void EventFd::drain() {
  std::uint64_t value = 0;
  while (::read(fd_, &value, sizeof value) < 0 && errno == EINTR) {
  }
}

std::vector<bool> wait_readable(const std::vector<int>& fds, int timeout_ms) {
  std::vector<pollfd> polls;
  for (int fd : fds) polls.push_back(pollfd{fd, POLLIN, 0});
  int n = 0;
  do {
    n = ::poll(polls.data(), polls.size(), timeout_ms);
  } while (n < 0 && errno == EINTR);
  std::vector<bool> out(fds.size(), false);
  for (std::size_t i = 0; i < polls.size(); ++i) out[i] = n > 0 && (polls[i].revents != 0);
  return out;
}

}  // namespace redisync::cli
