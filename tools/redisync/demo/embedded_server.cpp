// SPDX-License-Identifier: Apache-2.0
#include "embedded_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <fstream>
#include <thread>

#include "cli_error.h"
#include "process.h"
#include "redisync/client.h"
#include "redisync/errors.h"

namespace redisync::cli {
namespace {

constexpr auto kStartTimeout = std::chrono::seconds(10);
constexpr int kStartAttempts = 3;  // a port picked free can be taken before the server binds it

std::string log_tail(const std::string& path, std::size_t lines) {
  std::ifstream in(path);
  std::deque<std::string> tail;
  std::string line;
  while (std::getline(in, line)) {
    tail.push_back(line);
    if (tail.size() > lines) tail.pop_front();
  }
  std::string out;
  for (const auto& l : tail) out += "\n  " + l;
  return out;
}

enum class StartResult { ready, exited, timed_out };

// Polls PING through a redisync Client until it answers, the server exits or time runs out.
StartResult wait_until_ready(pid_t pid, std::uint16_t port) {
  Config config;
  config.port = port;
  config.retry_attempts = 0;
  config.connect_timeout = Duration{1000};
  config.timeout = Duration{1000};
  Client client(config);
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (try_reap(pid, &status)) return StartResult::exited;
    try {
      if (client.execute({"PING"}).str == "PONG") return StartResult::ready;
    } catch (const Error&) {
      // Not listening yet.
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return StartResult::timed_out;
}

}  // namespace

std::uint16_t free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw CliError(kExitOsError, "socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  // The sockaddr casts are how the BSD socket API is meant to be called.
  auto* generic = reinterpret_cast<sockaddr*>(&addr);
  if (::bind(fd, generic, sizeof addr) != 0 || ::getsockname(fd, generic, &len) != 0) {
    ::close(fd);
    throw CliError(kExitOsError, "cannot find a free loopback port");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::unique_ptr<EmbeddedServer> EmbeddedServer::start(const std::string& dir) {
  const std::string path = find_executable("redis-server");
  if (path.empty()) {
    throw CliError(kExitUnavailable,
                   "redis-server is not installed (Debian/Ubuntu: apt-get install redis-server); "
                   "install it, or point the demo at a server with --redis URL");
  }
  const std::string log = dir + "/redis.log";
  const int out =
      ::open((dir + "/redis.out").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  std::string last_error;
  for (int attempt = 0; attempt < kStartAttempts; ++attempt) {
    const std::uint16_t port = free_loopback_port();
    SpawnOptions spawn;
    spawn.close_fds = open_fds();
    spawn.stdout_fd = out;
    spawn.stderr_fd = out;
    const pid_t pid = spawn_process(
        path,
        {"redis-server", "--port", std::to_string(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--daemonize", "no", "--dir", dir, "--logfile", log},
        spawn);
    const StartResult result = wait_until_ready(pid, port);
    if (result == StartResult::ready) {
      if (out >= 0) ::close(out);
      return std::unique_ptr<EmbeddedServer>(new EmbeddedServer(pid, port));
    }
    if (result != StartResult::exited) kill_and_reap(pid);
    last_error = "redis-server on port " + std::to_string(port) +
                 (result == StartResult::exited ? " exited at startup"
                                                : " did not answer PING within 10 s") +
                 "; its output ends with:" + log_tail(log, 10) + log_tail(dir + "/redis.out", 5);
    if (result == StartResult::timed_out) break;  // a port clash exits at once; this did not
  }
  if (out >= 0) ::close(out);
  throw CliError(kExitUnavailable, last_error);
}

EmbeddedServer::~EmbeddedServer() { kill_and_reap(pid_); }

std::string EmbeddedServer::url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

}  // namespace redisync::cli
