// SPDX-License-Identifier: Apache-2.0
// Signals and cross-thread wake-ups as file descriptors, so the main thread can wait for
// "signal arrived", "child exited" and "the I/O thread has news" in one poll() and nothing
// unsafe ever runs in a signal handler.
#pragma once

#include <signal.h>
#include <sys/signalfd.h>

#include <initializer_list>
#include <vector>

namespace redisync::cli {

/// Blocks `signals` in the calling thread and reads them from a signalfd. Create it before
/// any other thread starts (the Client's I/O thread inherits the mask), or a signal could be
/// delivered to that thread and take its default action. Restores the mask when destroyed,
/// discarding the signals still pending (they were for this object to handle).
class SignalFd {
 public:
  /// Throws CliError (exit 71) if the signalfd cannot be created.
  explicit SignalFd(std::initializer_list<int> signals);
  ~SignalFd();
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;

  int fd() const { return fd_; }
  /// The mask before the constructor: what child processes should start with.
  const sigset_t& original_mask() const { return original_; }
  /// Every signal pending now (non-blocking; empty if none).
  std::vector<signalfd_siginfo> read_pending();

 private:
  int fd_ = -1;
  sigset_t original_{};
};

/// An eventfd: notify() from any thread (async-signal-safe), poll fd() for readability.
class EventFd {
 public:
  EventFd();
  ~EventFd();
  EventFd(const EventFd&) = delete;
  EventFd& operator=(const EventFd&) = delete;

  int fd() const { return fd_; }
  void notify();
  /// Resets the readable state.
  void drain();

 private:
  int fd_ = -1;
};

/// poll() on `fds` for readability with a timeout in ms (-1: none); retried on EINTR.
/// Returns, for each fd, whether it is readable.
std::vector<bool> wait_readable(const std::vector<int>& fds, int timeout_ms);

}  // namespace redisync::cli
