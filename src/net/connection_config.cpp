// SPDX-License-Identifier: Apache-2.0
// What a Config means for the connections to one server: their options (address, credentials,
// timeouts, reconnection delays) and the TLS context.
#include <algorithm>
#include <asio/ssl/context.hpp>
#include <memory>

#include "net/executor.h"
#include "redisync/errors.h"

namespace redisync::net {

Duration pubsub_heartbeat(const Config& config) {
  if (config.handoff != Handoff::grant) return Duration{0};
  return std::max(config.grant_lease / 10, Duration{10});
}

ConnectionOptions connection_options(const Config& config, bool pubsub) {
  ConnectionOptions o;
  o.host = config.host;
  o.port = config.port;
  o.unix_socket = config.unix_socket;
  o.tls = config.tls;
  o.tls_server_name = config.tls_options.server_name;
  o.tls_verify_peer = config.tls_options.verify_peer;
  o.username = config.username;
  o.password = config.password;
  o.client_name = config.client_name;
  o.database = config.database;
  o.connect_timeout = config.connect_timeout;
  o.timeout = config.timeout;
  o.reconnect_min = config.reconnection_delay_min;
  o.reconnect_max = config.reconnection_delay_max;
  o.pubsub = pubsub;
  return o;
}

std::unique_ptr<asio::ssl::context> make_tls_context(const Config& config) {
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
  const auto& t = config.tls_options;
  std::error_code ec;
  if (t.ca_file.empty()) {
    ctx->set_default_verify_paths(ec);
  } else {
    ctx->load_verify_file(t.ca_file, ec);
    if (ec) throw ConfigError("redisync config: tls_options.ca_file: cannot load '" + t.ca_file +
                              "': " + ec.message());
  }
  if (!t.cert_file.empty()) {
    ctx->use_certificate_chain_file(t.cert_file, ec);
    if (ec) throw ConfigError("redisync config: tls_options.cert_file: cannot load '" +
                              t.cert_file + "': " + ec.message());
    ctx->use_private_key_file(t.key_file, asio::ssl::context::pem, ec);
    if (ec) throw ConfigError("redisync config: tls_options.key_file: cannot load '" +
                              t.key_file + "': " + ec.message());
  }
  return ctx;
}

}  // namespace redisync::net
