// Helpers shared by the lock-kind integration tests (fair, read-write, fenced, spin): client
// config for a test server, and worker processes (tests/worker/test_worker.cpp).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

namespace redisync::test::kinds {

using namespace std::chrono_literals;

using redisync::test::config_for;

/// Starts the test worker with `args`; with `out_fd`, its stdout goes to a pipe read there.
inline pid_t spawn_worker(const std::vector<std::string>& args, int* out_fd = nullptr) {
  std::vector<std::string> argv{REDISYNC_TEST_WORKER};
  argv.insert(argv.end(), args.begin(), args.end());
  int fds[2] = {-1, -1};
  if (out_fd) {
    EXPECT_EQ(pipe(fds), 0);
  }
  const pid_t pid = redisync::test::detail::spawn_process(argv, out_fd ? fds[1] : -1);
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
inline void expect_clean_exit(pid_t pid, std::chrono::milliseconds limit = 120s) {
  int status = 0;
  ASSERT_TRUE(redisync::test::detail::reap_within(pid, limit, &status)) << "worker hung";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

/// SIGKILLs a worker and reaps it.
inline void kill_worker(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  redisync::test::detail::reap_within(pid, 5s, &status);
}

/// Runs `processes` workers of `kind-counter KIND` (`iterations` each) on one counter and
/// expects the exact total: mutual exclusion across processes.
inline void expect_exclusion_across_processes(RedisServer& server, const std::string& kind,
                                              int processes, int iterations) {
  const std::string name = unique_name(kind + ":");
  std::vector<pid_t> pids;
  for (int p = 0; p < processes; ++p) {
    pids.push_back(spawn_worker(
        {"kind-counter", kind, server.url(), name, "counter", std::to_string(iterations)}));
  }
  for (pid_t pid : pids) expect_clean_exit(pid);
  EXPECT_EQ(server.command({"GET", "counter"}).as_string(), std::to_string(processes * iterations));
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
}

}  // namespace redisync::test::kinds
