// SPDX-License-Identifier: Apache-2.0
// The byte streams under a Connection (plain TCP, TLS over TCP, unix socket) and the factory
// that picks one for a connection's options. Internal to src/net.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <system_error>

#include <asio/buffer.hpp>
#include <asio/io_context.hpp>
#include <asio/ssl/context.hpp>

#include "net/connection.h"

namespace redisync::net {

using IoHandler = std::function<void(std::error_code, std::size_t)>;
using ConnectHandler = std::function<void(std::error_code)>;

// The byte stream under a connection: plain TCP, TLS over TCP, or a unix socket.
class Connection::Stream {
 public:
  virtual ~Stream() = default;
  virtual void async_connect(const ConnectionOptions& o, ConnectHandler h) = 0;
  virtual void async_read_some(asio::mutable_buffer b, IoHandler h) = 0;
  virtual void async_write(asio::const_buffer b, IoHandler h) = 0;
  virtual void close() = 0;
  /// Closes with a TCP RST (SO_LINGER 0) where there is one: the kernel drops what it has not
  /// delivered yet instead of sending it on after the close (unix sockets: close()).
  virtual void abort() { close(); }
  /// Bytes the peer sent that this side has not read yet (0 when unknown or closed).
  virtual std::size_t unread_bytes() = 0;
};

/// A new, unconnected stream of the kind `options` asks for: a unix socket when
/// options.unix_socket is set, else TLS when options.tls (over `tls_context`), else TCP.
std::shared_ptr<Connection::Stream> make_stream(asio::io_context& io,
                                                const ConnectionOptions& options,
                                                asio::ssl::context* tls_context);

}  // namespace redisync::net
