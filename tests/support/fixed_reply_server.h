// SPDX-License-Identifier: Apache-2.0
// A misbehaving Redis for tests: a TCP server on 127.0.0.1 that speaks RESP but answers every
// command with one fixed reply (a server or proxy that returns what no script ever returns).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

namespace redisync::test {

class FixedReplyServer {
 public:
  explicit FixedReplyServer(std::string reply);
  ~FixedReplyServer();
  FixedReplyServer(const FixedReplyServer&) = delete;
  FixedReplyServer& operator=(const FixedReplyServer&) = delete;

  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }

 private:
  void serve();           // accepts until the server stops
  void answer(int conn);  // one connection, until it closes or the server stops
  // The length of the complete command at the start of `in`, or 0 while it is incomplete.
  static std::size_t command_length(const std::string& in);

  std::string reply_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace redisync::test
