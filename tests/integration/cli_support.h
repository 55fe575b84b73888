// SPDX-License-Identifier: Apache-2.0
// The fixture of the end-to-end tests of the `redisync` command-line tool (cli_*_test.cpp):
// runs the built binary ($REDISYNC_CLI, else <dir of this test>/../tools/redisync/redisync)
// against a private redis-server.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/redis_server.h"
#include "support/test_util.h"

namespace redisync::test {

using namespace std::chrono_literals;

inline std::string cli_path() {
  if (const char* env = std::getenv("REDISYNC_CLI"); env != nullptr && *env != '\0') return env;
  const auto self = std::filesystem::read_symlink("/proc/self/exe");
  return (self.parent_path() / ".." / "tools" / "redisync" / "redisync")
      .lexically_normal()
      .string();
}

// redisync-bench, the benchmark driver ($REDISYNC_BENCH, else beside the CLI).
inline std::string bench_path() {
  if (const char* env = std::getenv("REDISYNC_BENCH"); env != nullptr && *env != '\0') return env;
  return (std::filesystem::path(cli_path()).parent_path() / "redisync-bench").string();
}

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cli_ = cli_path();
    ASSERT_TRUE(std::filesystem::exists(cli_))
        << "redisync CLI not found at " << cli_
        << " (build target redisync_cli, or set REDISYNC_CLI)";
  }

  // Runs the CLI to completion (bounded) and returns its status and output.
  ProcessResult cli(std::vector<std::string> args, std::chrono::milliseconds timeout = 30s) {
    args.insert(args.begin(), cli_);
    return run_process(args, timeout);
  }

  // Runs redisync-bench (bench_path()) as cli() runs the CLI.
  ProcessResult bench(std::vector<std::string> args, std::chrono::milliseconds timeout = 30s) {
    args.insert(args.begin(), bench_path());
    return run_process(args, timeout);
  }

  // Starts the CLI (or `program`) in the background, output to a temp file; reap with finish().
  pid_t start_cli(std::vector<std::string> args, std::string* output_path,
                  const std::string& program = "") {
    args.insert(args.begin(), program.empty() ? cli_ : program);
    return detail::spawn_to_temp_file(args, "cli.out", output_path);
  }

  // Starts `redisync run [options] <name> -- sh -c 'touch <marker>; exec sleep 30'` in the
  // background (as start_cli): it holds the lock from when the marker exists (started()) until
  // signalled or the lock is lost.
  pid_t start_sleeper(const std::string& name, const std::string& marker,
                      std::string* output_path, std::vector<std::string> options = {}) {
    std::vector<std::string> args{"run", "--redis", server_.url()};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {name, "--", "sh", "-c", "touch " + marker + "; exec sleep 30"});
    return start_cli(std::move(args), output_path);
  }

  // True once the command of start_sleeper() runs (its marker exists), within 10 s.
  static bool started(const std::string& marker) {
    return wait_until([&] { return file_exists(marker); }, 10s);
  }

  // Waits (bounded) for a background CLI; its exit code (128+signal), or -1 if it hung.
  static int finish(pid_t pid, std::chrono::milliseconds limit = 20s) {
    int status = 0;
    if (!detail::reap_within(pid, limit, &status)) {
      ::kill(pid, SIGKILL);
      detail::reap_within(pid, 5s, &status);
      return -1;
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
  }

  static std::string read_file(const std::string& path) { return read_text_file(path); }

  static bool file_exists(const std::string& path) { return std::filesystem::exists(path); }

  bool key_exists(const std::string& key) {
    return server_.command({"EXISTS", key}).as_integer() == 1;
  }

  RedisServer server_;
  std::string cli_;
};

/// The words of the line of `redisync ls` output whose NAME column (the second) is `name`;
/// empty if none.
inline std::vector<std::string> row_of(const std::string& output, const std::string& name) {
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::vector<std::string> row;
    for (std::string w; words >> w;) row.push_back(w);
    if (row.size() >= 2 && row[1] == name) return row;
  }
  return {};
}

// A loopback port nothing listens on (bound to 0, read back, closed).
inline std::uint16_t unused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}


// tmux: a private server (-S socket), a detached session with a fixed size.
class Tmux {
 public:
  Tmux() : socket_(temp_file("tmux.sock")) {}
  ~Tmux() { run_process({"tmux", "-S", socket_, "kill-server"}, 10s); }
  ProcessResult start(const std::string& shell_command) {
    return run_process({"tmux", "-S", socket_, "new-session", "-d", "-x", "150", "-y", "30",
                        shell_command},
                       10s);
  }
  std::string screen() {
    return run_process({"tmux", "-S", socket_, "capture-pane", "-p"}, 10s).output;
  }
  void keys(const std::string& keys) {
    run_process({"tmux", "-S", socket_, "send-keys", keys}, 10s);
  }

 private:
  std::string socket_;
};

}  // namespace redisync::test
