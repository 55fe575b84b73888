// SPDX-License-Identifier: Apache-2.0
#include "support/fixed_reply_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "support/test_util.h"

namespace redisync::test {

FixedReplyServer::FixedReplyServer(std::string reply) : reply_(std::move(reply)) {
  const auto listener = listen_on_loopback();
  fd_ = listener.fd;
  port_ = listener.port;
  thread_ = std::thread([this] { serve(); });
}

FixedReplyServer::~FixedReplyServer() {
  stop_ = true;
  thread_.join();
  ::close(fd_);
}

void FixedReplyServer::serve() {
  std::vector<std::thread> connections;
  while (!stop_) {
    pollfd pfd{fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 20) <= 0) continue;
    const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn >= 0) connections.emplace_back([this, conn] { answer(conn); });
  }
  for (auto& t : connections) t.join();
}

void FixedReplyServer::answer(int conn) {
  std::string in;
  while (!stop_) {
    pollfd cfd{conn, POLLIN, 0};
    if (::poll(&cfd, 1, 20) <= 0) continue;
    char buf[4096];
    const auto n = ::recv(conn, buf, sizeof buf, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<std::size_t>(n));
    while (const auto used = command_length(in)) {
      in.erase(0, used);
      (void)!::send(conn, reply_.data(), reply_.size(), MSG_NOSIGNAL);
    }
  }
  ::close(conn);
}

// "*N\r\n" + N x "$len\r\n<bytes>\r\n".
std::size_t FixedReplyServer::command_length(const std::string& in) {
  auto number_line = [&](std::size_t at, char type, long& value) -> std::size_t {
    if (at >= in.size() || in[at] != type) return 0;
    const auto end = in.find("\r\n", at);
    if (end == std::string::npos) return 0;
    value = std::stol(in.substr(at + 1, end - at - 1));
    return end + 2;
  };
  long args = 0;
  std::size_t at = number_line(0, '*', args);
  for (long i = 0; at != 0 && i < args; ++i) {
    long len = 0;
    at = number_line(at, '$', len);
    if (at == 0 || at + static_cast<std::size_t>(len) + 2 > in.size()) return 0;
    at += static_cast<std::size_t>(len) + 2;
  }
  return at;
}

}  // namespace redisync::test
