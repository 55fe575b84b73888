// SPDX-License-Identifier: Apache-2.0
// Connection, its life: requests submitted before and after connecting, the connect (address,
// transport, handshake), reconnection with backoff after a loss, drop and close. The traffic of
// a connected Connection (writes, reads, replies, timeouts) is in connection_io.cpp, the byte
// streams under it in stream.cpp.
#include "net/connection.h"

#include <hiredis/hiredis.h>

#include <algorithm>

#include "net/stream.h"
#include "redisync/errors.h"

namespace redisync::net {

namespace {

// SELECT's answers to an index the server does not have ("ERR DB index is out of range";
// Redis before 2.6: "ERR invalid DB index") or to any index but 0 in cluster mode. Matched by
// their text: other error replies to the first command of a connection ("ERR max number of
// clients reached", LOADING, BUSY) are passing states, to be retried.
bool is_database_refusal(const std::string& reply) {
  return reply.find("DB index") != std::string::npos ||
         reply.find("SELECT is not allowed") != std::string::npos;
}

}  // namespace

std::string ConnectionOptions::describe() const {
  if (!unix_socket.empty()) return "unix:" + unix_socket;
  std::string hp = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  hp += ":" + std::to_string(port);
  return tls ? "rediss://" + hp : hp;
}

std::shared_ptr<Connection> Connection::create(asio::io_context& io, ConnectionOptions options,
                                               asio::ssl::context* tls_context) {
  return std::shared_ptr<Connection>(new Connection(io, std::move(options), tls_context));
}

Connection::Connection(asio::io_context& io, ConnectionOptions options,
                       asio::ssl::context* tls_context)
    : io_(io),
      options_(std::move(options)),
      tls_context_(tls_context),
      read_buffer_(64 * 1024),
      connect_timer_(io),
      reconnect_timer_(io),
      timeout_timer_(io) {}

Connection::~Connection() {
  if (reader_) redisReaderFree(reader_);
}

std::exception_ptr Connection::connection_error(const std::string& what, bool maybe_sent) const {
  return std::make_exception_ptr(
      ConnectionError("redis " + options_.describe() + ": " + what, errc::connection_failed,
                      maybe_sent));
}

void Connection::execute(const std::vector<std::string>& args, ReplyHandler handler) {
  execute(args, std::move(handler), options_.timeout);
}

void Connection::execute(const std::vector<std::string>& args, ReplyHandler handler,
                         Duration timeout) {
  submit(args, std::move(handler), timeout, false);
}

void Connection::execute_resent_on_timeout(const std::vector<std::string>& args,
                                           ReplyHandler handler) {
  submit(args, std::move(handler), options_.timeout, true);
}

void Connection::submit(const std::vector<std::string>& args, ReplyHandler handler,
                        Duration timeout, bool give_up_on_timeout) {
  switch (state_) {
    case State::closed:
      if (handler) {
        handler(std::make_exception_ptr(
                    ClientClosedError("redis " + options_.describe() + ": client closed")),
                {});
      }
      return;
    case State::ready:
      enqueue(args, std::move(handler), timeout, true, give_up_on_timeout);
      return;
    case State::idle:
    case State::backoff:
      // A request while waiting to reconnect tries at once rather than after the backoff.
      enqueue(args, std::move(handler), timeout, false, give_up_on_timeout);
      start_connect();
      return;
    case State::connecting:
    case State::handshaking:
      enqueue(args, std::move(handler), timeout, false, give_up_on_timeout);
      return;
  }
}

void Connection::enqueue(const std::vector<std::string>& args, ReplyHandler handler,
                         Duration timeout, bool to_socket, bool give_up_on_timeout) {
  const auto now = Clock::now();
  if (to_socket) {
    encode_command(write_buffer_, args);
    if (!(options_.pubsub && handshake_replies_ == 0)) {
      inflight_.push_back(
          Pending{std::move(handler), now + timeout, now, false, {}, give_up_on_timeout});
    }
    start_write();
  } else {
    // Keep the encoded command with the pending entry until the handshake is done.
    Pending p{std::move(handler), now + timeout, now, false, {}, give_up_on_timeout};
    encode_command(p.encoded, args);
    waiting_.push_back(std::move(p));
  }
  arm_timeout_timer();
}

Duration Connection::reply_lag(Clock::time_point now) const {
  if (inflight_.empty()) return Duration{0};
  return std::max(std::chrono::ceil<Duration>(now - inflight_.front().sent_at), Duration{0});
}

void Connection::connect() {
  if (state_ == State::idle || state_ == State::backoff) start_connect();
}

void Connection::start_connect() {
  reconnect_timer_.cancel();
  state_ = State::connecting;
  ++generation_;
  stream_ = make_stream(io_, options_, tls_context_);
  if (reader_) redisReaderFree(reader_);
  reader_ = redisReaderCreate();

  const auto gen = generation_;
  auto self = shared_from_this();
  if (options_.resolve) {
    // Learn the address first (the connect timer covers the resolution too).
    arm_connect_timer();
    options_.resolve([this, self, gen](std::exception_ptr error, std::string host,
                                       std::uint16_t port) {
      if (gen != generation_ || state_ != State::connecting) return;
      if (error) return fail_connect(error);
      options_.host = std::move(host);
      options_.port = port;
      connect_stream();
    });
    return;
  }
  arm_connect_timer();
  connect_stream();
}

void Connection::arm_connect_timer() {
  const auto gen = generation_;
  auto self = shared_from_this();
  connect_timer_.expires_after(options_.connect_timeout);
  connect_timer_.async_wait([this, self, gen](std::error_code ec) {
    if (ec || gen != generation_) return;
    if (state_ == State::connecting || state_ == State::handshaking) {
      fail_connect(connection_error(
          "connect timed out after " + std::to_string(options_.connect_timeout.count()) + " ms",
          false));
    }
  });
}

void Connection::connect_stream() {
  const auto gen = generation_;
  auto self = shared_from_this();
  auto stream = stream_;  // connect + TLS handshake is a composed operation too
  stream->async_connect(options_, [this, self, gen, stream](std::error_code ec) {
    if (gen != generation_ || state_ != State::connecting) return;
    if (ec) return fail_connect(connection_error("connect failed: " + ec.message(), false));
    on_transport_connected();
  });
}

void Connection::on_transport_connected() {
  state_ = State::handshaking;
  start_read();
  send_handshake();
}

void Connection::send_handshake() {
  // AUTH, SELECT and CLIENT SETNAME go first, pipelined; user requests wait until all succeed.
  std::vector<std::vector<std::string>> steps;
  // A user name is sent even with an empty password (an ACL user with nopass): dropping it
  // would run everything as "default", with default's rights.
  if (!options_.password.empty() || !options_.username.empty()) {
    if (options_.username.empty()) {
      steps.push_back({"AUTH", options_.password});
    } else {
      steps.push_back({"AUTH", options_.username, options_.password});
    }
  }
  if (options_.database != 0 && !options_.pubsub) {
    steps.push_back({"SELECT", std::to_string(options_.database)});
  }
  if (!options_.client_name.empty()) steps.push_back({"CLIENT", "SETNAME", options_.client_name});
  if (options_.require_master) steps.push_back({"ROLE"});
  if (steps.empty()) return on_handshake_done(nullptr);

  auto remaining = std::make_shared<std::size_t>(steps.size());
  auto failed = std::make_shared<bool>(false);
  const auto gen = generation_;
  handshake_replies_ = steps.size();
  for (const auto& step : steps) {
    const std::string name = step[0];
    const auto now = Clock::now();
    encode_command(write_buffer_, step);
    inflight_.push_back(Pending{
        [this, remaining, failed, name, gen](std::exception_ptr error, Reply reply) {
          if (gen != generation_ || *failed) return;
          --handshake_replies_;
          if (!error && name == "ROLE" && !reply.is_error() &&
              (!reply.is_array() || reply.elements.empty() ||
               reply.elements[0].str != "master")) {
            error = std::make_exception_ptr(ConnectionError(
                "redis " + options_.describe() + ": not a master (role " +
                (reply.is_array() && !reply.elements.empty() ? reply.elements[0].str : "?") +
                "); waiting for the new master"));
          }
          if (!error && reply.is_error()) {
            const std::string where = "redis " + options_.describe() + ": ";
            if (name == "AUTH") {
              error = std::make_exception_ptr(AuthError(where + "authentication failed: " +
                                                        reply.str));
            } else if (name == "SELECT" && is_database_refusal(reply.str)) {
              // The server has no such database: no resend or reconnect can fix the Config,
              // so the request fails now, as a ConfigError naming the index.
              error = std::make_exception_ptr(ConfigError(
                  "redisync config: database " + std::to_string(options_.database) +
                  " does not exist on redis " + options_.describe() + " (SELECT answered: " +
                  reply.str +
                  "); the URL's /N or ?db=N must name one of the server's databases "
                  "(redis.conf `databases`, 16 by default: 0..15)"));
            } else {
              error = std::make_exception_ptr(
                  ConnectionError(where + name + " failed during connect: " + reply.str));
            }
          }
          if (error) {
            *failed = true;
            return fail_connect(error);
          }
          if (--*remaining == 0) on_handshake_done(nullptr);
        },
        now + options_.connect_timeout, now, false, {}, false});
  }
  start_write();
}

void Connection::on_handshake_done(std::exception_ptr) {
  connect_timer_.cancel();
  state_ = State::ready;
  handshake_replies_ = 0;
  backoff_ = Duration{0};
  // The state handler goes first so what it sends (INFO, SUBSCRIBE) precedes queued requests.
  if (state_handler_) state_handler_(true);
  if (state_ != State::ready) return;
  flush_waiting();
}

void Connection::flush_waiting() {
  while (!waiting_.empty()) {
    Pending p = std::move(waiting_.front());
    waiting_.pop_front();
    if (p.done) continue;  // timed out while we were connecting
    write_buffer_ += p.encoded;
    p.encoded.clear();
    if (!options_.pubsub) {
      p.sent_at = Clock::now();
      inflight_.push_back(std::move(p));
    }
  }
  start_write();
}

void Connection::fail_connect(std::exception_ptr error) {
  if (stream_) stream_->close();
  ++generation_;
  scripts_.clear();
  connect_timer_.cancel();
  handshake_replies_ = 0;
  write_buffer_.clear();
  write_in_progress_ = false;
  // Nothing was sent to a server that never finished the handshake: safe to retry.
  fail_all(inflight_, error);
  fail_all(waiting_, error);
  if (state_ == State::closed) return;
  schedule_reconnect();
}

void Connection::lost(std::exception_ptr error, bool abort) {
  if (state_ == State::closed) return;
  const bool was_ready = state_ == State::ready;
  if (state_ == State::connecting || state_ == State::handshaking) return fail_connect(error);
  if (stream_) {
    if (abort) {
      stream_->abort();
    } else {
      stream_->close();
    }
  }
  ++generation_;
  scripts_.clear();
  write_buffer_.clear();
  write_in_progress_ = false;
  fail_all(inflight_, error);
  schedule_reconnect();
  if (was_ready && state_handler_) state_handler_(false);
}

void Connection::schedule_reconnect() {
  state_ = State::backoff;
  backoff_ = backoff_.count() == 0 ? options_.reconnect_min
                                   : std::min(options_.reconnect_max, backoff_ * 2);
  auto self = shared_from_this();
  reconnect_timer_.expires_after(backoff_);
  reconnect_timer_.async_wait([this, self](std::error_code ec) {
    if (ec || state_ != State::backoff) return;
    start_connect();
  });
}

void Connection::drop(const std::string& reason) {
  if (state_ == State::ready || state_ == State::handshaking || state_ == State::connecting) {
    lost(connection_error(reason, true));
  }
}

void Connection::close() {
  if (state_ == State::closed) return;
  const bool was_ready = state_ == State::ready;
  state_ = State::closed;
  ++generation_;
  if (stream_) stream_->close();
  connect_timer_.cancel();
  reconnect_timer_.cancel();
  timeout_timer_.cancel();
  auto error = std::make_exception_ptr(
      ClientClosedError("redis " + options_.describe() + ": client closed"));
  fail_all(inflight_, error);
  fail_all(waiting_, error);
  if (was_ready && state_handler_) state_handler_(false);
  push_handler_ = nullptr;
  state_handler_ = nullptr;
}

void Connection::fail_all(std::deque<Pending>& queue, std::exception_ptr error) {
  // Emptied first: what the handlers submit meanwhile goes to the emptied queue.
  auto failing = std::move(queue);
  queue.clear();
  for (auto& p : failing) {
    if (p.done || !p.handler) continue;
    p.done = true;
    p.handler(error, {});
  }
}

}  // namespace redisync::net
