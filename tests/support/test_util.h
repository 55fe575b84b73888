// SPDX-License-Identifier: Apache-2.0
// Small helpers for tests: bounded polling, unique names, per-process temp files and
// running short-lived helper processes (openssl, redis-cli) with a time limit.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace redisync::test {

/// A TCP socket listening on 127.0.0.1 at a free port (for the tests' fake servers). Throws
/// std::runtime_error when it cannot listen.
struct LoopbackListener {
  int fd = -1;
  std::uint16_t port = 0;
};
LoopbackListener listen_on_loopback();

/// A load test's iteration count: `n` in the plain build, a quarter (at least 1) under a
/// sanitizer, whose instrumented runs are 5-15x slower. The plain build keeps the full load;
/// the sanitizers need the code paths, not the volume.
constexpr int load_count(int n) {
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
  return n / 4 > 0 ? n / 4 : 1;
#else
  return n;
#endif
}

/// Polls `pred` every `step` until it returns true or `limit` has passed. Returns the last
/// result, so `EXPECT_TRUE(wait_until(...))` reads naturally. `pred` is always evaluated at least
/// once and once more after the deadline, so a condition that becomes true right at the limit
/// still counts.
template <class F>
bool wait_until(F pred, std::chrono::milliseconds limit,
                std::chrono::milliseconds step = std::chrono::milliseconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    if (pred()) return true;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(step, deadline - now));
  }
}

/// `prefix` followed by 16 random hex digits, e.g. "lock:3f9a0c...". Thread-safe.
std::string unique_name(const std::string& prefix);

/// A fresh path (the file is not created) inside this process's temp dir, ending in `stem`:
/// "<dir>/<n>-<stem>". Each call returns a different path. The dir is removed at exit.
std::string temp_file(const std::string& stem);

/// The per-process temp dir (created on first use under /tmp, removed at normal exit).
std::string process_temp_dir();

/// The whole of a text file ("" when it cannot be read).
std::string read_text_file(const std::string& path);

struct ProcessResult {
  int exit_code = -1;      ///< exit status; 128+signal if killed by a signal
  bool timed_out = false;  ///< the process was SIGKILLed after `timeout`
  std::string output;      ///< stdout and stderr, interleaved
};

/// Runs `argv` (argv[0] looked up in PATH) with stdin from /dev/null, collects its output and
/// waits at most `timeout`. Throws std::runtime_error only if the process cannot be started.
ProcessResult run_process(const std::vector<std::string>& argv,
                          std::chrono::milliseconds timeout = std::chrono::seconds(30));

namespace detail {

/// fork+exec of `argv` with stdin=/dev/null, stdout+stderr=`out_fd` (-1: /dev/null), all other
/// fds closed, default signal mask, and PR_SET_PDEATHSIG=SIGKILL so the child dies with this
/// process. The fork is done on one long-lived internal thread, because the death signal is
/// tied to the forking *thread*, not the process. Throws std::runtime_error if fork fails; if
/// exec fails the child exits with status 127.
pid_t spawn_process(const std::vector<std::string>& argv, int out_fd);
/// spawn_process() with stdout+stderr going to a fresh temp_file(`stem`), whose path is
/// stored in `output_path`.
pid_t spawn_to_temp_file(const std::vector<std::string>& argv, const std::string& stem,
                         std::string* output_path);

/// mkdtemp("/tmp/<stem>-XXXXXX"); throws std::runtime_error on failure.
std::string make_temp_dir(const std::string& stem);

/// Non-blocking reap: true if `pid` has exited (and was reaped); stores the status.
bool try_reap(pid_t pid, int* status);

/// Waits up to `limit` for `pid` to exit; true if it was reaped.
bool reap_within(pid_t pid, std::chrono::milliseconds limit, int* status);

}  // namespace detail
}  // namespace redisync::test
