// SPDX-License-Identifier: Apache-2.0
// The byte streams under a Connection: plain TCP, TLS over TCP, or a unix socket, each behind
// Connection::Stream (connect, read, write, close, abort), and make_stream() to pick one.
#include "net/stream.h"

#include <fcntl.h>

#include <asio/connect.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/ssl/host_name_verification.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/write.hpp>
#include <functional>
#include <string>
#include <system_error>
#include <utility>

namespace redisync::net {

namespace {

// Resolves and connects a TCP socket, then disables Nagle (latency matters more than packets).
template <class Socket>
void tcp_connect(asio::io_context& io, Socket& socket, const ConnectionOptions& o,
                 ConnectHandler h) {
  auto resolver = std::make_shared<asio::ip::tcp::resolver>(io);
  resolver->async_resolve(
      o.host, std::to_string(o.port),
      [resolver, &socket, h = std::move(h)](std::error_code ec,
                                            asio::ip::tcp::resolver::results_type results) {
        if (ec) return h(ec);
        asio::async_connect(socket, results,
                            [&socket, h](std::error_code ec2, const asio::ip::tcp::endpoint&) {
                              if (!ec2) {
                                // Not inherited by programs the application forks and execs.
                                ::fcntl(socket.native_handle(), F_SETFD, FD_CLOEXEC);
                                std::error_code ignored;
                                socket.set_option(asio::ip::tcp::no_delay(true), ignored);
                                socket.set_option(asio::socket_base::keep_alive(true), ignored);
                              }
                              h(ec2);
                            });
      });
}

// Reads and writes of any asio stream (a socket, or TLS over one).
template <class AsioStream>
class StreamOver : public Connection::Stream {
 public:
  template <class... Args>
  explicit StreamOver(Args&&... args) : stream_(std::forward<Args>(args)...) {}
  void async_read_some(asio::mutable_buffer b, IoHandler h) override {
    stream_.async_read_some(b, std::move(h));
  }
  void async_write(asio::const_buffer b, IoHandler h) override {
    asio::async_write(stream_, b, std::move(h));
  }
  std::size_t unread_bytes() override {
    std::error_code ignored;  // (a closed socket: 0)
    return stream_.lowest_layer().available(ignored);
  }

 protected:
  AsioStream stream_;
};

// A stream over a TCP socket (the socket itself, or TLS over it): closes with a shutdown
// first, aborts with a reset.
template <class AsioStream>
class OverTcp : public StreamOver<AsioStream> {
 public:
  template <class... Args>
  explicit OverTcp(asio::io_context& io, Args&&... args)
      : StreamOver<AsioStream>(io, std::forward<Args>(args)...), io_(io) {}
  void close() override {
    std::error_code ignored;
    this->stream_.lowest_layer().shutdown(asio::socket_base::shutdown_both, ignored);
    this->stream_.lowest_layer().close(ignored);
  }
  void abort() override {
    std::error_code ignored;
    this->stream_.lowest_layer().set_option(asio::socket_base::linger(true, 0), ignored);
    this->stream_.lowest_layer().close(ignored);
  }

 protected:
  asio::io_context& io_;
};

class TcpStream final : public OverTcp<asio::ip::tcp::socket> {
 public:
  explicit TcpStream(asio::io_context& io) : OverTcp(io) {}
  void async_connect(const ConnectionOptions& o, ConnectHandler h) override {
    tcp_connect(io_, stream_, o, std::move(h));
  }
};

class TlsStream final : public OverTcp<asio::ssl::stream<asio::ip::tcp::socket>> {
 public:
  TlsStream(asio::io_context& io, asio::ssl::context& ctx) : OverTcp(io, ctx) {}
  void async_connect(const ConnectionOptions& o, ConnectHandler h) override {
    const std::string name = o.tls_server_name.empty() ? o.host : o.tls_server_name;
    // SNI, and the certificate must name the host we asked for.
    SSL_ctrl(stream_.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(name.c_str()));
    if (o.tls_verify_peer) {
      stream_.set_verify_mode(asio::ssl::verify_peer);
      stream_.set_verify_callback(asio::ssl::host_name_verification(name));
    } else {
      stream_.set_verify_mode(asio::ssl::verify_none);
    }
    tcp_connect(io_, stream_.next_layer(), o, [this, h = std::move(h)](std::error_code ec) {
      if (ec) return h(ec);
      stream_.async_handshake(asio::ssl::stream_base::client, h);
    });
  }
};

class UnixStream final : public StreamOver<asio::local::stream_protocol::socket> {
 public:
  explicit UnixStream(asio::io_context& io) : StreamOver(io) {}
  void async_connect(const ConnectionOptions& o, ConnectHandler h) override {
    stream_.async_connect(asio::local::stream_protocol::endpoint(o.unix_socket),
                          [this, h = std::move(h)](std::error_code ec) {
                            if (!ec) ::fcntl(stream_.native_handle(), F_SETFD, FD_CLOEXEC);
                            h(ec);
                          });
  }
  void close() override {
    std::error_code ignored;
    stream_.close(ignored);
  }
};

}  // namespace

std::shared_ptr<Connection::Stream> make_stream(asio::io_context& io,
                                                const ConnectionOptions& options,
                                                asio::ssl::context* tls_context) {
  if (!options.unix_socket.empty()) return std::make_shared<UnixStream>(io);
  if (options.tls) return std::make_shared<TlsStream>(io, *tls_context);
  return std::make_shared<TcpStream>(io);
}

}  // namespace redisync::net
