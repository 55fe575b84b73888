// SPDX-License-Identifier: Apache-2.0
// One connection to one Redis server: TCP, TLS or unix socket; pipelined; with per-request
// timeouts and automatic reconnection.
//
// Threading: a Connection lives on its Client's io_context, which one I/O thread runs. Every
// member function must be called on that thread (use asio::post from elsewhere); every
// handler is invoked there. Nothing here blocks.
#pragma once

#include <chrono>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/ssl/context.hpp>
#include <asio/steady_timer.hpp>

#include "net/reply.h"
#include "net/script_loads.h"
#include "redisync/config.h"

struct redisReader;

namespace redisync::net {

using Clock = std::chrono::steady_clock;

/// Receives a request's outcome: an exception (ConnectionError, TimeoutError, ...) or the reply.
/// Error *replies* from Redis arrive as a Reply of kind error, not as an exception.
using ReplyHandler = std::function<void(std::exception_ptr, Reply)>;

/// Where and how to connect; derived from Config by the executor.
struct ConnectionOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::string unix_socket;
  bool tls = false;
  std::string tls_server_name;  // SNI and hostname check; empty = host
  bool tls_verify_peer = true;
  std::string username;
  std::string password;
  std::string client_name;
  int database = 0;
  Duration connect_timeout{10000};
  Duration timeout{3000};
  Duration reconnect_min{50};
  Duration reconnect_max{2000};
  bool pubsub = false;  // after the handshake, every reply goes to the push handler
  /// Handshake checks ROLE and refuses a server that is not a master (Sentinel topology: a
  /// demoted old master must not take writes).
  bool require_master = false;
  /// If set, called before every connect attempt to learn the address (Sentinel topology:
  /// ask the sentinels for the current master). It answers with an error or host and port.
  using ResolveDone = std::function<void(std::exception_ptr, std::string, std::uint16_t)>;
  std::function<void(ResolveDone)> resolve;

  /// "127.0.0.1:6379", "unix:/path" or "rediss://host:port", for messages.
  std::string describe() const;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  /// `tls_context` must outlive the connection when options.tls is set.
  static std::shared_ptr<Connection> create(asio::io_context& io, ConnectionOptions options,
                                            asio::ssl::context* tls_context);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  /// Sends one command. The handler gets the reply, or ConnectionError when the connection
  /// could not be made or dropped with the request unanswered (ConnectionError::maybe_sent()
  /// tells whether the server may have run it), TimeoutError after options.timeout.
  /// Connects on first use. In pubsub mode (after the handshake) the handler is never
  /// called: replies go to the push handler; pass nullptr.
  void execute(const std::vector<std::string>& args, ReplyHandler handler);
  /// As execute(), with an explicit timeout for this request.
  void execute(const std::vector<std::string>& args, ReplyHandler handler, Duration timeout);
  /// As execute(), for a request its caller resends after a timeout (a step deduplicated by a
  /// record): when it times out after being written, the connection is given up at once, as
  /// if the server had gone away (the other requests in flight get ConnectionError with
  /// maybe_sent()). Replies come in request order, so a connection that did not answer it in
  /// time cannot answer a resend before it either; the resend goes to a fresh connection.
  void execute_resent_on_timeout(const std::vector<std::string>& args, ReplyHandler handler);

  /// Starts connecting now (otherwise the first execute() does).
  void connect();
  /// Drops the socket, fails everything pending with ClientClosedError, stops reconnecting.
  void close();
  /// Drops the socket as if the server had gone away (tests, health checks); reconnects.
  void drop(const std::string& reason);

  /// Pubsub mode: every reply after the handshake (messages, subscribe acks).
  void set_push_handler(std::function<void(Reply)> handler) { push_handler_ = std::move(handler); }
  /// Called with true after each successful handshake, false after each loss of connection.
  void set_state_handler(std::function<void(bool)> handler) { state_handler_ = std::move(handler); }

  bool ready() const { return state_ == State::ready; }
  const ConnectionOptions& options() const { return options_; }
  /// The address connected to (or to connect to next).
  std::string address() const { return options_.describe(); }
  /// Requests sent and not yet answered or timed out (for tests and benchmarks).
  std::size_t in_flight() const { return inflight_.size(); }
  /// How long the oldest request sent and not yet answered has waited at `now` (zero when
  /// none): how far behind its replies are being read.
  Duration reply_lag(Clock::time_point now) const;
  /// The scripts loaded on the server of the current socket (the Executor's bookkeeping;
  /// emptied whenever the socket is lost: the next one may reach a server without them).
  ScriptLoads& scripts() { return scripts_; }

 /// The byte stream under a connection (TCP, TLS or unix socket); defined in net/stream.h.
  class Stream;

 private:
  enum class State { idle, connecting, handshaking, ready, backoff, closed };
  struct Pending {
    ReplyHandler handler;
    Clock::time_point deadline;
    Clock::time_point sent_at;
    bool done = false;  // answered by a timeout already; the reply is discarded on arrival
    std::string encoded;  // only while waiting_: the command, sent once the handshake is done
    bool give_up_on_timeout = false;  // execute_resent_on_timeout()
  };

  Connection(asio::io_context& io, ConnectionOptions options, asio::ssl::context* tls_context);

  void start_connect();
  void arm_connect_timer();
  void connect_stream();
  void on_transport_connected();
  void send_handshake();
  void on_handshake_done(std::exception_ptr error);
  void fail_connect(std::exception_ptr error);
  // `abort`: reset the TCP connection (RST) instead of closing it, so the kernel drops what it
  // has not delivered yet (Stream::abort).
  void lost(std::exception_ptr error, bool abort = false);
  void schedule_reconnect();
  void enqueue(const std::vector<std::string>& args, ReplyHandler handler, Duration timeout,
               bool to_socket, bool give_up_on_timeout);
  void submit(const std::vector<std::string>& args, ReplyHandler handler, Duration timeout,
              bool give_up_on_timeout);
  void flush_waiting();
  // A write may start now: bytes waiting, none in progress, not dispatching a read, and the
  // socket past connect.
  bool can_write() const;
  void start_write();
  void write_now();
  void start_read();
  void on_read(std::size_t n);
  void dispatch(Reply reply);
  void arm_timeout_timer();
  // Arms the timeout timer for `at` unless it is armed for `at` or earlier already (or `at` is
  // Clock::time_point::max(): nothing to time).
  void arm_timeout_timer_by(Clock::time_point at);
  // Sets the timeout timer to fire at `at` and run on_timeout_timer().
  void wait_timeout_timer(Clock::time_point at);
  void on_timeout_timer();
  // Empties `queue` and calls the handler of each entry not yet answered with `error`.
  void fail_all(std::deque<Pending>& queue, std::exception_ptr error);
  std::exception_ptr connection_error(const std::string& what, bool maybe_sent) const;

  asio::io_context& io_;
  ConnectionOptions options_;
  asio::ssl::context* tls_context_;
  std::shared_ptr<Stream> stream_;  // shared with a write in progress (see write_now)
  State state_ = State::idle;
  std::uint64_t generation_ = 0;  // bumps on every new socket, so stale callbacks are ignored

  std::deque<Pending> waiting_;   // submitted before the handshake finished; not yet sent
  std::deque<Pending> inflight_;  // written (or in the write buffer), awaiting replies in order
  std::size_t handshake_replies_ = 0;  // leading inflight_ entries belonging to the handshake
  std::string write_buffer_;
  /// The bytes of the last write that completed, emptied: the next write_buffer_, so a busy
  /// connection reuses two buffers instead of growing a new one from nothing per write (each
  /// growth step of a large buffer also made malloc consolidate its free lists).
  std::shared_ptr<std::string> spare_write_;
  static constexpr std::size_t kSpareWriteMax = 1 << 20;  // a larger one is freed
  bool write_in_progress_ = false;
  static constexpr int kEagerWriteCommands = 16;
  int buffered_commands_ = 0;  // requests in write_buffer_ (roughly: start_write calls)
  bool flush_posted_ = false;  // a write_now() is queued for the end of this loop turn
  bool corked_ = false;  // dispatching a read: writes wait until all its replies are handled
  std::vector<char> read_buffer_;
  redisReader* reader_ = nullptr;

  asio::steady_timer connect_timer_;
  asio::steady_timer reconnect_timer_;
  asio::steady_timer timeout_timer_;
  Clock::time_point timeout_timer_at_{};
  /// When the server last sent anything on this connection (or bytes were found waiting to
  /// be read). A written request's timeout counts from this when it is later than the
  /// request's send time: replies come in order, so a request behind a long pipeline that the
  /// server is still answering is late, not lost.
  Clock::time_point last_heard_{};
  /// The moment a written request `p` times out (see last_heard_).
  Clock::time_point written_deadline(const Pending& p) const;
  Duration backoff_{0};

  std::function<void(Reply)> push_handler_;
  std::function<void(bool)> state_handler_;
  ScriptLoads scripts_;
};

}  // namespace redisync::net
