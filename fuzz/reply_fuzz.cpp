// SPDX-License-Identifier: Apache-2.0
// Fuzz target: reply handling of net::Connection (the hiredis reader, the reply conversion and
// the dispatch of replies to requests), driven through a real socket.
//
// Per input, a Connection to a unix socket served by this process sends PING; the "server"
// answers with the input's bytes and closes. Input byte 0 picks the handshake: bit 0 sets a
// client name, so the first reply answers CLIENT SETNAME; bit 1 sets require_master, so a
// reply answers ROLE. Contract checked: the request completes (a reply, or ProtocolError /
// ConnectionError / AuthError / TimeoutError) within a bounded time, without crashing.
#include <unistd.h>

#include <asio/io_context.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/write.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>

#include "net/connection.h"
#include "redisync/errors.h"

namespace {

using asio::local::stream_protocol;
using namespace std::chrono_literals;

struct Harness {
  asio::io_context io;
  std::string dir;
  std::string path;
  stream_protocol::acceptor acceptor{io};

  Harness() {
    char tmpl[] = "/tmp/redisync-reply-fuzz-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) std::abort();
    dir = tmpl;
    path = dir + "/s.sock";
    acceptor.open(stream_protocol());
    acceptor.bind(stream_protocol::endpoint(path));
    acceptor.listen();
  }
  ~Harness() {
    acceptor.close();
    ::unlink(path.c_str());
    ::rmdir(dir.c_str());
  }
};

Harness& harness() {
  static Harness h;
  return h;
}

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "reply_fuzz: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Harness& h = harness();
  const std::uint8_t mode = size > 0 ? data[0] : 0;
  auto bytes = std::make_shared<std::string>(
      size > 0 ? std::string(reinterpret_cast<const char*>(data) + 1, size - 1) : std::string());

  redisync::net::ConnectionOptions options;
  options.unix_socket = h.path;
  options.connect_timeout = redisync::Duration{1000};
  options.timeout = redisync::Duration{300};
  options.reconnect_min = redisync::Duration{10000};  // no reconnect within one input
  options.reconnect_max = redisync::Duration{10000};
  if (mode & 1) options.client_name = "fuzz";
  if (mode & 2) options.require_master = true;

  h.io.restart();
  auto peer = std::make_shared<stream_protocol::socket>(h.io);
  h.acceptor.async_accept(*peer, [peer, bytes](std::error_code ec) {
    if (ec) return;
    asio::async_write(*peer, asio::buffer(*bytes), [peer](std::error_code, std::size_t) {
      std::error_code ignored;
      peer->shutdown(stream_protocol::socket::shutdown_send, ignored);
    });
  });

  bool done = false;
  auto connection = redisync::net::Connection::create(h.io, options, nullptr);
  connection->execute({"PING"}, [&done](std::exception_ptr error, redisync::net::Reply) {
    done = true;
    if (!error) return;
    try {
      std::rethrow_exception(error);
    } catch (const redisync::ProtocolError&) {
    } catch (const redisync::ConnectionError&) {  // includes AuthError
    } catch (const redisync::TimeoutError&) {
    } catch (const redisync::ServerError&) {
    } catch (const std::exception& e) {
      std::fprintf(stderr, "reply_fuzz: unexpected error: %s\n", e.what());
      std::abort();
    }
  });
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  while (!done && std::chrono::steady_clock::now() < deadline) h.io.run_one_for(100ms);
  if (!done) fail("the request neither completed nor failed within 5 s");

  connection->close();
  connection.reset();
  h.acceptor.cancel();
  std::error_code ignored;
  peer->close(ignored);
  h.io.restart();
  h.io.poll();
  return 0;
}
