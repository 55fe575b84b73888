// SPDX-License-Identifier: Apache-2.0
// Sentinel topology: finds the current master through any reachable sentinel and follows
// failovers (+switch-master on the sentinels' pub/sub), so the executor's connections re-route
// to the new master.
//
// Threading: io thread only.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/ssl/context.hpp>

#include "net/connection.h"
#include "redisync/config.h"

namespace redisync::net {

/// Reads a SENTINEL GET-MASTER-ADDR-BY-NAME reply: [host, port]. False (with `why`, naming the
/// reply) for anything else, including a port that is not a number in 1..65535. Never throws
/// anything but std::bad_alloc: it runs on the I/O thread. Pure, for unit and fuzz tests.
bool parse_master_addr(const Reply& reply, std::string& host, std::uint16_t& port,
                       std::string& why);

class SentinelMonitor : public std::enable_shared_from_this<SentinelMonitor> {
 public:
  using ResolveDone = ConnectionOptions::ResolveDone;

  SentinelMonitor(asio::io_context& io, const Config& config, asio::ssl::context* tls);
  ~SentinelMonitor();

  /// Asks the sentinels, one after the other, for the master's address; answers with the
  /// first address given, or ConnectionError naming every sentinel tried.
  void resolve(ResolveDone done);

  /// Starts listening for +switch-master; `on_switch(host, port)` runs for our master.
  void start(std::function<void(const std::string&, std::uint16_t)> on_switch);
  void close();

  /// The last master address learned ("" before the first resolution).
  const std::string& master_host() const { return master_host_; }
  std::uint16_t master_port() const { return master_port_; }

 private:
  void ask(std::size_t index, std::shared_ptr<std::string> errors, ResolveDone done);
  ConnectionOptions sentinel_options(std::size_t index, bool pubsub) const;
  void on_push(const Reply& reply);

  asio::io_context& io_;
  Config config_;
  asio::ssl::context* tls_;
  std::shared_ptr<Connection> watch_;  // pub/sub connection to one sentinel
  std::size_t watch_index_ = 0;        // which sentinel it uses (rotates on failure)
  std::function<void(const std::string&, std::uint16_t)> on_switch_;
  std::string master_host_;
  std::uint16_t master_port_ = 0;
  bool closed_ = false;
};

}  // namespace redisync::net
