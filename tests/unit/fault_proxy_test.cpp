// SPDX-License-Identifier: Apache-2.0
// The fault-injecting proxy (tests/support/fault_proxy.h) against a real redis-server: it
// forwards, and each fault does what the chaos suite relies on. The client side is a raw
// socket, so the test sees exactly which bytes arrive.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <vector>

#include "support/fault_proxy.h"
#include "support/redis_server.h"
#include "support/resp_scan.h"
#include "support/test_util.h"

namespace redisync::test {
namespace {

using namespace std::chrono_literals;

std::string resp(const std::vector<std::string>& args) {
  std::string out = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return out;
}

// A blocking loopback client with bounded reads.
class RawConn {
 public:
  explicit RawConn(std::uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = fd_ >= 0 && ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  }
  ~RawConn() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;

  bool connected() const { return connected_; }
  void send(const std::vector<std::string>& args) { send_raw(resp(args)); }
  void send_raw(const std::string& bytes) {
    ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(bytes.size()));
  }
  // Reads until `n` whole replies arrived, the connection closed, or `limit` passed.
  std::vector<std::string> replies(size_t n, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    std::vector<std::string> out;
    for (;;) {
      long len = 0;
      while (out.size() < n && (len = resp_frame_length(buf_)) > 0) {
        out.push_back(buf_.substr(0, static_cast<size_t>(len)));
        buf_.erase(0, static_cast<size_t>(len));
      }
      if (out.size() >= n || closed_) return out;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return out;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char chunk[4096];
      const ssize_t got = ::recv(fd_, chunk, sizeof chunk, 0);
      if (got <= 0) {
        closed_ = true;
        reset_ = got < 0 && errno == ECONNRESET;
      } else {
        buf_.append(chunk, static_cast<size_t>(got));
      }
    }
  }
  // A send that may meet a connection already reset (false then).
  bool try_send(const std::vector<std::string>& args) {
    const std::string bytes = resp(args);
    return ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
           static_cast<ssize_t>(bytes.size());
  }
  bool closed() const { return closed_; }
  bool was_reset() const { return reset_; }

 private:
  int fd_;
  bool connected_ = false;
  bool closed_ = false;
  bool reset_ = false;
  std::string buf_;
};

TEST(RespScan, SplitsFramesAndWaitsForIncompleteOnes) {
  EXPECT_EQ(resp_frame_length("+OK\r\n:1\r\n"), 5);
  EXPECT_EQ(resp_frame_length("$3\r\nfoo\r\n"), 9);
  EXPECT_EQ(resp_frame_length("$-1\r\n"), 5);
  EXPECT_EQ(resp_frame_length("*2\r\n$1\r\na\r\n*1\r\n:5\r\n"), 19);
  EXPECT_EQ(resp_frame_length("*2\r\n$1\r\na\r\n"), 0);
  EXPECT_EQ(resp_frame_length("$3\r\nfo"), 0);
  EXPECT_EQ(resp_frame_length("+OK"), 0);
  EXPECT_EQ(resp_frame_length("PING\r\n"), 6);  // inline command
  EXPECT_EQ(resp_frame_length("$x\r\n"), -1);
  EXPECT_EQ(resp_frame_length("$3\r\nfooXY"), -1);
  std::vector<std::string> args;
  ASSERT_TRUE(resp_request_args(resp({"EVALSHA", "abc", "1", "k"}), &args));
  EXPECT_EQ(args, (std::vector<std::string>{"EVALSHA", "abc", "1", "k"}));
  ASSERT_TRUE(resp_request_args("set a  b\r\n", &args));
  EXPECT_EQ(args, (std::vector<std::string>{"set", "a", "b"}));
  EXPECT_FALSE(resp_request_args(":1\r\n", &args));
}

class FaultProxyTest : public ::testing::Test {
 protected:
  RedisServer server;
  FaultProxy proxy{server.port()};
};

TEST_F(FaultProxyTest, ForwardsPipelinedCommandsInOrder) {
  RawConn c(proxy.port());
  ASSERT_TRUE(c.connected());
  std::string batch;
  for (int i = 0; i < 200; ++i) batch += resp({"INCR", "n"});
  c.send_raw(batch);
  const auto got = c.replies(200, 10s);
  ASSERT_EQ(got.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], ":" + std::to_string(i + 1) + "\r\n");
  EXPECT_EQ(proxy.stats().requests, 200);
  EXPECT_EQ(proxy.stats().accepted, 1);
}

TEST_F(FaultProxyTest, BlackholeToServerHoldsRequestsUntilLifted) {
  RawConn c(proxy.port());
  ASSERT_TRUE(c.connected());
  ASSERT_EQ(c.replies(0, 0ms).size(), 0u);
  proxy.set_blackhole(Direction::to_server, true);
  c.send({"SET", "k", "v"});
  EXPECT_TRUE(c.replies(1, 300ms).empty());
  EXPECT_TRUE(server.command({"GET", "k"}).is_nil()) << "the request reached the server";
  EXPECT_FALSE(c.closed());
  proxy.set_blackhole(Direction::to_server, false);
  EXPECT_EQ(c.replies(1, 5s), std::vector<std::string>{"+OK\r\n"});
}

TEST_F(FaultProxyTest, BlackholeToClientRunsTheCommandButHoldsTheReply) {
  RawConn c(proxy.port());
  ASSERT_TRUE(c.connected());
  proxy.set_blackhole(Direction::to_client, true);
  c.send({"SET", "k", "v"});
  ASSERT_TRUE(wait_until([&] { return !server.command({"GET", "k"}).is_nil(); }, 5s));
  EXPECT_TRUE(c.replies(1, 300ms).empty());
  proxy.set_blackhole(Direction::to_client, false);
  EXPECT_EQ(c.replies(1, 5s), std::vector<std::string>{"+OK\r\n"});
}

TEST_F(FaultProxyTest, DelayWithJitterKeepsOrder) {
  RawConn c(proxy.port());
  ASSERT_TRUE(c.connected());
  proxy.set_delay(Direction::to_client, 300ms, 0ms);
  c.send({"PING"});
  EXPECT_TRUE(c.replies(1, 100ms).empty()) << "the reply was not delayed";
  EXPECT_EQ(c.replies(1, 5s), std::vector<std::string>{"+PONG\r\n"});
  proxy.set_delay(Direction::both, 0ms, 20ms);
  for (int i = 0; i < 50; ++i) c.send({"INCR", "j"});  // separate writes, separate chunks
  const auto got = c.replies(50, 10s);
  ASSERT_EQ(got.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(got[static_cast<size_t>(i)], ":" + std::to_string(i + 1) + "\r\n");
  EXPECT_THROW(proxy.set_delay(Direction::both, -1ms, 0ms), std::invalid_argument);
}

TEST_F(FaultProxyTest, ResetClosesOpenConnectionsAndNewOnesWork) {
  RawConn a(proxy.port());
  RawConn b(proxy.port());
  a.send({"PING"});
  b.send({"PING"});
  ASSERT_EQ(a.replies(1, 5s).size(), 1u);
  ASSERT_EQ(b.replies(1, 5s).size(), 1u);
  EXPECT_EQ(proxy.reset_connections(), 2);
  EXPECT_TRUE(a.replies(1, 5s).empty());
  EXPECT_TRUE(a.closed());
  EXPECT_TRUE(a.was_reset()) << "closed with FIN, not RST";
  RawConn c(proxy.port());
  c.send({"PING"});
  EXPECT_EQ(c.replies(1, 5s), std::vector<std::string>{"+PONG\r\n"});
  EXPECT_EQ(proxy.stats().resets, 2);
}

TEST_F(FaultProxyTest, SetUpstreamMovesNewConnectionsOnly) {
  RedisServer other;
  ASSERT_FALSE(server.command({"SET", "where", "first"}).is_error());
  ASSERT_FALSE(other.command({"SET", "where", "second"}).is_error());
  RawConn before(proxy.port());
  before.send({"GET", "where"});
  ASSERT_EQ(before.replies(1, 5s), std::vector<std::string>{"$5\r\nfirst\r\n"});
  proxy.set_upstream(other.port());
  RawConn after(proxy.port());
  after.send({"GET", "where"});
  EXPECT_EQ(after.replies(1, 5s), std::vector<std::string>{"$6\r\nsecond\r\n"});
  before.send({"GET", "where"});
  EXPECT_EQ(before.replies(1, 5s), std::vector<std::string>{"$5\r\nfirst\r\n"})
      << "an open connection was moved";
}

TEST_F(FaultProxyTest, RefuseResetsNewConnectionsOnly) {
  RawConn open(proxy.port());
  open.send({"PING"});
  ASSERT_EQ(open.replies(1, 5s).size(), 1u);
  proxy.set_refuse(true);
  {
    RawConn refused(proxy.port());
    if (refused.connected()) {  // the kernel accepts before the proxy resets it
      if (refused.try_send({"PING"})) {
        EXPECT_TRUE(refused.replies(1, 5s).empty());
      }
      EXPECT_TRUE(refused.replies(1, 5s).empty());
      EXPECT_TRUE(refused.closed());
    }
  }
  open.send({"PING"});
  EXPECT_EQ(open.replies(1, 5s), std::vector<std::string>{"+PONG\r\n"});
  proxy.set_refuse(false);
  RawConn again(proxy.port());
  again.send({"PING"});
  EXPECT_EQ(again.replies(1, 5s), std::vector<std::string>{"+PONG\r\n"});
  EXPECT_EQ(proxy.stats().refused, 1);
}

TEST_F(FaultProxyTest, DropsExactlyTheNthMatchingReplyThenResets) {
  RawConn c(proxy.port());
  proxy.drop_reply({.command = "incr", .first_arg = "target"}, 2, AfterDrop::reset);
  // One chunk: sent one by one, a request after the dropped one could meet the reset already
  // (a descheduled test thread) and fail its send.
  c.send_raw(resp({"INCR", "other"}) +
             resp({"INCR", "target"}) +  // match 1: delivered
             resp({"INCR", "target"}) +  // match 2: runs, reply dropped, then reset
             resp({"INCR", "other"}));
  const auto got = c.replies(4, 5s);
  EXPECT_EQ(got, (std::vector<std::string>{":1\r\n", ":1\r\n"}));
  EXPECT_TRUE(c.closed());
  EXPECT_EQ(server.command({"GET", "target"}).as_string(), "2") << "the dropped command did not run";
  EXPECT_EQ(proxy.stats().dropped_replies, 1);
  EXPECT_EQ(proxy.stats().matched, 2);
  // The rule fired once: a third match on a new connection is delivered.
  RawConn d(proxy.port());
  d.send({"INCR", "target"});
  EXPECT_EQ(d.replies(1, 5s), std::vector<std::string>{":3\r\n"});
}

TEST_F(FaultProxyTest, DroppedReplyWithStallKeepsTheConnectionSilent) {
  RawConn c(proxy.port());
  proxy.drop_reply({.command = "GET", .arg_containing = "k"}, 1, AfterDrop::stall);
  c.send({"SET", "k", "1"});
  c.send({"GET", "k"});
  EXPECT_EQ(c.replies(2, 2s), std::vector<std::string>{"+OK\r\n"});
  c.send({"PING"});
  EXPECT_TRUE(c.replies(1, 300ms).empty());
  EXPECT_FALSE(c.closed());
  EXPECT_EQ(proxy.stats().dropped_replies, 1);
  EXPECT_THROW(proxy.drop_reply({.command = "GET"}, 0), std::invalid_argument);
  EXPECT_THROW(proxy.drop_reply({.command = ""}, 1), std::invalid_argument);
}

TEST_F(FaultProxyTest, WithheldRequestNeverRunsAndCanBeDeliveredLate) {
  RawConn c(proxy.port());
  proxy.withhold_request({.command = "INCR", .first_arg = "target"}, 1);
  c.send({"INCR", "before"});
  EXPECT_EQ(c.replies(1, 2s), std::vector<std::string>{":1\r\n"});
  // One chunk: the request before the withheld one still runs (its reply stalls with the rest).
  c.send_raw(resp({"INCR", "before"}) + resp({"INCR", "target"}) + resp({"INCR", "after"}));
  EXPECT_TRUE(c.replies(1, 300ms).empty()) << "replies stall from the withheld request on";
  EXPECT_TRUE(wait_until([&] { return server.command({"GET", "before"}).as_string() == "2"; }, 2s));
  c.send({"PING"});
  EXPECT_TRUE(c.replies(1, 300ms).empty()) << "the connection stalls after the withheld request";
  EXPECT_FALSE(c.closed());
  EXPECT_EQ(server.command({"EXISTS", "target"}).as_integer(), 0) << "the withheld request ran";
  EXPECT_EQ(server.command({"EXISTS", "after"}).as_integer(), 0) << "a later request went through";
  EXPECT_EQ(proxy.stats().withheld, 1);
  const auto held = proxy.withheld();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0], (std::vector<std::string>{"INCR", "target"}));
  // The rule fired once: new connections are forwarded; the test delivers the copy late.
  RawConn d(proxy.port());
  d.send({"INCR", "target"});
  EXPECT_EQ(d.replies(1, 5s), std::vector<std::string>{":1\r\n"});
  EXPECT_EQ(server.command(held[0]).as_integer(), 2);
  EXPECT_THROW(proxy.withhold_request({.command = "GET"}, 0), std::invalid_argument);
}

TEST_F(FaultProxyTest, SubscribedConnectionsAreForwardedNotMatched) {
  RawConn sub(proxy.port());
  proxy.drop_reply({.command = "PUBLISH"}, 1, AfterDrop::reset);
  sub.send({"SUBSCRIBE", "ch"});
  ASSERT_EQ(sub.replies(1, 5s).size(), 1u);
  EXPECT_EQ(server.command({"PUBLISH", "ch", "hi"}).as_integer(), 1);
  const auto msg = sub.replies(1, 5s);
  ASSERT_EQ(msg.size(), 1u);
  EXPECT_NE(msg[0].find("hi"), std::string::npos);
  RawConn pub(proxy.port());
  pub.send({"PUBLISH", "ch", "x"});
  EXPECT_TRUE(pub.replies(1, 2s).empty());  // the rule applies to ordinary connections
  EXPECT_EQ(sub.replies(1, 5s).size(), 1u);
}

}  // namespace
}  // namespace redisync::test
