// SPDX-License-Identifier: Apache-2.0
#include "net/sentinel.h"

#include <algorithm>

#include "log_line.h"
#include "net/executor.h"  // connection_options
#include "net/server_text.h"
#include "redisync/errors.h"

namespace redisync::net {

bool parse_master_addr(const Reply& reply, std::string& host, std::uint16_t& port,
                       std::string& why) {
  const auto bad = [&] {
    why = "answered " + reply.to_string() + " (expected [host, port])";
    return false;
  };
  if (!reply.is_array() || reply.elements.size() != 2) return bad();
  const Reply& h = reply.elements[0];
  const Reply& p = reply.elements[1];
  if (!h.is_string() || h.str.empty()) return bad();
  std::uint16_t value = 0;
  if (p.is_integer()) {
    if (p.integer < 1 || p.integer > 65535) return bad();
    value = static_cast<std::uint16_t>(p.integer);
  } else if (!p.is_string() || !parse_port_number(p.str, value)) {
    return bad();
  }
  host = h.str;
  port = value;
  return true;
}

SentinelMonitor::SentinelMonitor(asio::io_context& io, const Config& config,
                                 asio::ssl::context* tls)
    : io_(io), config_(config), tls_(tls) {}

SentinelMonitor::~SentinelMonitor() { close(); }

ConnectionOptions SentinelMonitor::sentinel_options(std::size_t index, bool pubsub) const {
  // The data connection's options (TLS, timeouts, reconnection delays), with what differs for
  // a sentinel: its address, its own credentials, no client name, no database to select, and
  // a connect timeout within the reply timeout.
  ConnectionOptions o = connection_options(config_, pubsub);
  const auto& seed = config_.seeds[index % config_.seeds.size()];
  o.host = seed.host;
  o.port = seed.port;
  o.unix_socket.clear();
  o.username = config_.sentinel_username;
  o.password = config_.sentinel_password;
  o.client_name.clear();
  o.database = 0;
  o.connect_timeout = std::min(config_.connect_timeout, config_.timeout);
  return o;
}

void SentinelMonitor::resolve(ResolveDone done) {
  if (closed_) {
    return done(std::make_exception_ptr(ClientClosedError("client closed")), {}, 0);
  }
  ask(0, std::make_shared<std::string>(), std::move(done));
}

void SentinelMonitor::ask(std::size_t index, std::shared_ptr<std::string> errors,
                          ResolveDone done) {
  if (index >= config_.seeds.size()) {
    return done(std::make_exception_ptr(ConnectionError(
                    "no sentinel knows master '" + config_.sentinel_master + "':" + *errors)),
                {}, 0);
  }
  // A short-lived connection per question: resolutions happen only on (re)connects.
  auto conn = Connection::create(io_, sentinel_options(index, false), tls_);
  auto self = shared_from_this();
  conn->execute(
      {"SENTINEL", "GET-MASTER-ADDR-BY-NAME", config_.sentinel_master},
      [self, conn, index, errors, done](std::exception_ptr error, Reply reply) {
        conn->close();
        std::string why;
        if (error) {
          try {
            std::rethrow_exception(error);
          } catch (const std::exception& e) {
            why = e.what();
          }
        } else {
          std::string host;
          std::uint16_t port = 0;
          if (parse_master_addr(reply, host, port, why)) {
            self->master_host_ = host;
            self->master_port_ = port;
            return done(nullptr, host, port);
          }
        }
        const auto& seed = self->config_.seeds[index];
        *errors += " " + seed.host + ":" + std::to_string(seed.port) + ": " + why + ";";
        self->ask(index + 1, errors, done);
      });
}

void SentinelMonitor::start(std::function<void(const std::string&, std::uint16_t)> on_switch) {
  on_switch_ = std::move(on_switch);
  auto options = sentinel_options(watch_index_, true);
  // Each reconnect of the watch connection moves on to the next sentinel, so one dead
  // sentinel does not blind us.
  std::weak_ptr<SentinelMonitor> weak = shared_from_this();
  options.resolve = [weak](ResolveDone done) {
    auto self = weak.lock();
    if (!self) return done(std::make_exception_ptr(ClientClosedError("client closed")), {}, 0);
    const auto& seed = self->config_.seeds[self->watch_index_++ % self->config_.seeds.size()];
    done(nullptr, seed.host, seed.port);
  };
  watch_ = Connection::create(io_, options, tls_);
  watch_->set_push_handler([this](Reply r) { on_push(r); });
  watch_->set_state_handler([this](bool up) {
    if (up) watch_->execute({"SUBSCRIBE", "+switch-master"}, nullptr);
  });
  watch_->connect();
}

void SentinelMonitor::on_push(const Reply& reply) {
  // ["message", "+switch-master", "<name> <old ip> <old port> <new ip> <new port>"]
  if (!reply.is_array() || reply.elements.size() < 3 || reply.elements[0].str != "message") {
    return;
  }
  std::string name, new_host;
  std::uint16_t new_port = 0;
  if (!parse_switch_master(reply.elements[2].str, name, new_host, new_port)) {
    // Not followed: a wrong address would move every connection away from the master. The
    // payload is a sentinel's, not a secret; shown printable and cut to 200 bytes.
    std::string shown = reply.elements[2].str.substr(0, 200);
    for (char& c : shown) c = c < ' ' || c > '~' ? '?' : c;
    detail::log_line(config_, "ignoring a malformed +switch-master message: '" + shown + "'");
    return;
  }
  if (name != config_.sentinel_master) return;
  master_host_ = new_host;
  master_port_ = new_port;
  if (on_switch_) on_switch_(new_host, master_port_);
}

void SentinelMonitor::close() {
  if (closed_) return;
  closed_ = true;
  if (watch_) watch_->close();
}

}  // namespace redisync::net
