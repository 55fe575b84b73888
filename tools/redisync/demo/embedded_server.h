// SPDX-License-Identifier: Apache-2.0
// A private redis-server for `redisync demo`: started on a free loopback port, killed at the end.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

namespace redisync::cli {

class EmbeddedServer {
 public:
  /// Starts redis-server (no persistence) with its files in `dir` and waits until it answers
  /// PING (at most 10 s). Throws CliError (exit 69) if redis-server is not installed or does
  /// not come up; the message includes the tail of its log.
  static std::unique_ptr<EmbeddedServer> start(const std::string& dir);
  /// SIGKILLs and reaps the server.
  ~EmbeddedServer();
  EmbeddedServer(const EmbeddedServer&) = delete;
  EmbeddedServer& operator=(const EmbeddedServer&) = delete;

  std::uint16_t port() const { return port_; }
  /// "redis://127.0.0.1:<port>"
  std::string url() const;

 private:
  EmbeddedServer(pid_t pid, std::uint16_t port) : pid_(pid), port_(port) {}
  pid_t pid_;
  std::uint16_t port_;
};

/// A TCP port on 127.0.0.1 that nothing listens on right now (bind to port 0, read it back).
std::uint16_t free_loopback_port();

}  // namespace redisync::cli
