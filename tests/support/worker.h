// SPDX-License-Identifier: Apache-2.0
// The test worker process (tests/worker/test_worker.cpp) as the integration tests run it:
// start it, read what it prints, wait for it or kill it. REDISYNC_TEST_WORKER is the worker's
// path (a compile definition of integration_tests).
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "support/test_util.h"

namespace redisync::test {

/// Starts the test worker with `args`, its stdout and stderr going to `out_fd` (-1: nowhere).
inline pid_t spawn_worker(const std::vector<std::string>& args, int out_fd) {
  std::vector<std::string> argv{REDISYNC_TEST_WORKER};
  argv.insert(argv.end(), args.begin(), args.end());
  return detail::spawn_process(argv, out_fd);
}

/// Starts the test worker with `args`; with `out_fd`, its stdout goes to a pipe read there.
inline pid_t spawn_worker(const std::vector<std::string>& args, int* out_fd = nullptr) {
  int fds[2] = {-1, -1};
  if (out_fd) {
    EXPECT_EQ(pipe(fds), 0);
  }
  const pid_t pid = spawn_worker(args, out_fd ? fds[1] : -1);
  if (out_fd) {
    close(fds[1]);
    *out_fd = fds[0];
  }
  return pid;
}

/// Reads `fd` to EOF (bounded by the writer's exit) and closes it.
inline std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return out;
}

/// Reads from `fd` until `word` has arrived (the worker's "held" / "waiting" line).
inline bool read_word(int fd, const std::string& word) {
  std::string got;
  char c;
  while (got.find(word) == std::string::npos && read(fd, &c, 1) == 1) got += c;
  return got.find(word) != std::string::npos;
}

/// Waits (bounded) for a worker to exit; expects exit status 0.
inline void expect_clean_exit(pid_t pid,
                              std::chrono::milliseconds limit = std::chrono::seconds(120)) {
  int status = 0;
  ASSERT_TRUE(detail::reap_within(pid, limit, &status)) << "worker hung";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

/// SIGKILLs a worker and reaps it.
inline void kill_worker(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  detail::reap_within(pid, std::chrono::seconds(5), &status);
}

}  // namespace redisync::test
