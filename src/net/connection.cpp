#include "net/connection.h"

#include <fcntl.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <asio/connect.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/post.hpp>
#include <asio/ssl/host_name_verification.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/write.hpp>

#include "redisync/errors.h"

namespace redisync::net {

namespace {

using IoHandler = std::function<void(std::error_code, std::size_t)>;
using ConnectHandler = std::function<void(std::error_code)>;

Reply convert(const redisReply* r) {
  Reply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.kind = Reply::Kind::string;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.kind = Reply::Kind::status;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.kind = Reply::Kind::error;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.kind = Reply::Kind::integer;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.kind = Reply::Kind::array;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert(r->element[i]));
      break;
    default:
      out.kind = Reply::Kind::nil;
  }
  return out;
}

}  // namespace

std::string ConnectionOptions::describe() const {
  if (!unix_socket.empty()) return "unix:" + unix_socket;
  std::string hp = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  hp += ":" + std::to_string(port);
  return tls ? "rediss://" + hp : hp;
}

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
};

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

class TcpStream final : public Connection::Stream {
 public:
  explicit TcpStream(asio::io_context& io) : io_(io), socket_(io) {}
  void async_connect(const ConnectionOptions& o, ConnectHandler h) override {
    tcp_connect(io_, socket_, o, std::move(h));
  }
  void async_read_some(asio::mutable_buffer b, IoHandler h) override {
    socket_.async_read_some(b, std::move(h));
  }
  void async_write(asio::const_buffer b, IoHandler h) override {
    asio::async_write(socket_, b, std::move(h));
  }
  void close() override {
    std::error_code ignored;
    socket_.shutdown(asio::socket_base::shutdown_both, ignored);
    socket_.close(ignored);
  }
  void abort() override {
    std::error_code ignored;
    socket_.set_option(asio::socket_base::linger(true, 0), ignored);
    socket_.close(ignored);
  }

 private:
  asio::io_context& io_;
  asio::ip::tcp::socket socket_;
};

class TlsStream final : public Connection::Stream {
 public:
  TlsStream(asio::io_context& io, asio::ssl::context& ctx) : io_(io), stream_(io, ctx) {}
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
  void async_read_some(asio::mutable_buffer b, IoHandler h) override {
    stream_.async_read_some(b, std::move(h));
  }
  void async_write(asio::const_buffer b, IoHandler h) override {
    asio::async_write(stream_, b, std::move(h));
  }
  void close() override {
    std::error_code ignored;
    stream_.next_layer().shutdown(asio::socket_base::shutdown_both, ignored);
    stream_.next_layer().close(ignored);
  }
  void abort() override {
    std::error_code ignored;
    stream_.next_layer().set_option(asio::socket_base::linger(true, 0), ignored);
    stream_.next_layer().close(ignored);
  }

 private:
  asio::io_context& io_;
  asio::ssl::stream<asio::ip::tcp::socket> stream_;
};

class UnixStream final : public Connection::Stream {
 public:
  explicit UnixStream(asio::io_context& io) : socket_(io) {}
  void async_connect(const ConnectionOptions& o, ConnectHandler h) override {
    socket_.async_connect(asio::local::stream_protocol::endpoint(o.unix_socket),
                          [this, h = std::move(h)](std::error_code ec) {
                            if (!ec) ::fcntl(socket_.native_handle(), F_SETFD, FD_CLOEXEC);
                            h(ec);
                          });
  }
  void async_read_some(asio::mutable_buffer b, IoHandler h) override {
    socket_.async_read_some(b, std::move(h));
  }
  void async_write(asio::const_buffer b, IoHandler h) override {
    asio::async_write(socket_, b, std::move(h));
  }
  void close() override {
    std::error_code ignored;
    socket_.close(ignored);
  }

 private:
  asio::local::stream_protocol::socket socket_;
};

}  // namespace

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

void Connection::connect() {
  if (state_ == State::idle || state_ == State::backoff) start_connect();
}

void Connection::start_connect() {
  reconnect_timer_.cancel();
  state_ = State::connecting;
  ++generation_;
  if (!options_.unix_socket.empty()) {
    stream_ = std::make_shared<UnixStream>(io_);
  } else if (options_.tls) {
    stream_ = std::make_shared<TlsStream>(io_, *tls_context_);
  } else {
    stream_ = std::make_shared<TcpStream>(io_);
  }
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
  if (!options_.password.empty()) {
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
  connect_timer_.cancel();
  handshake_replies_ = 0;
  write_buffer_.clear();
  write_in_progress_ = false;
  // Nothing was sent to a server that never finished the handshake: safe to retry.
  auto inflight = std::move(inflight_);
  inflight_.clear();
  fail_all(inflight, error);
  auto waiting = std::move(waiting_);
  waiting_.clear();
  fail_all(waiting, error);
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
  write_buffer_.clear();
  write_in_progress_ = false;
  auto inflight = std::move(inflight_);
  inflight_.clear();
  fail_all(inflight, error);
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
  auto inflight = std::move(inflight_);
  inflight_.clear();
  fail_all(inflight, error);
  auto waiting = std::move(waiting_);
  waiting_.clear();
  fail_all(waiting, error);
  if (was_ready && state_handler_) state_handler_(false);
  push_handler_ = nullptr;
  state_handler_ = nullptr;
}

void Connection::fail_all(std::deque<Pending>& queue, std::exception_ptr error) {
  for (auto& p : queue) {
    if (p.done || !p.handler) continue;
    p.done = true;
    p.handler(error, {});
  }
}

bool Connection::can_write() const {
  return !corked_ && !write_in_progress_ && !write_buffer_.empty() && stream_ &&
         (state_ == State::ready || state_ == State::handshaking);
}

void Connection::start_write() {
  if (!can_write()) return;
  // Write at the end of this turn of the event loop, not now: requests issued by handlers
  // that were posted (e.g. the next step of 64 async lock chains, each started by a reply in
  // the same read) then leave in one write instead of one syscall (and server read) each.
  // A batch that is already large leaves now, so the server works on it while the rest of
  // this turn's requests are being produced (a single connection would otherwise alternate
  // between client and server instead of overlapping them).
  if (++buffered_commands_ >= kEagerWriteCommands) return write_now();
  if (flush_posted_) return;
  flush_posted_ = true;
  asio::post(io_, [self = shared_from_this()] {
    self->flush_posted_ = false;
    self->write_now();
  });
}

void Connection::write_now() {
  if (!can_write()) return;
  write_in_progress_ = true;
  buffered_commands_ = 0;
  // The write owns its bytes and its stream: a large write goes out in several steps, and if
  // the connection is lost and rebuilt meanwhile, the remaining steps of the old write still
  // touch the old (closed) stream and buffer; they must outlive it.
  auto bytes = std::make_shared<std::string>();
  bytes->swap(write_buffer_);
  const auto gen = generation_;
  auto self = shared_from_this();
  auto stream = stream_;
  stream->async_write(asio::buffer(*bytes), [this, self, gen, stream, bytes](std::error_code ec,
                                                                           std::size_t) {
    if (gen != generation_) return;
    write_in_progress_ = false;
    if (ec) return lost(connection_error("write failed: " + ec.message(), true));
    start_write();
  });
}

void Connection::start_read() {
  const auto gen = generation_;
  auto self = shared_from_this();
  auto stream = stream_;  // a TLS read is a composed operation: keep its stream alive
  stream->async_read_some(asio::buffer(read_buffer_),
                          [this, self, gen, stream](std::error_code ec, std::size_t n) {
                             if (gen != generation_) return;
                             if (ec) {
                               const std::string why = ec == asio::error::eof
                                                           ? "server closed the connection"
                                                           : "read failed: " + ec.message();
                               return lost(connection_error(why, true));
                             }
                             on_read(n);
                           });
}

void Connection::on_read(std::size_t n) {
  const auto gen = generation_;
  // Requests issued by reply handlers are batched into one write after the whole read is
  // dispatched; writing each at once would split a pipeline into many small writes (and the
  // server into as many reads).
  corked_ = true;
  if (redisReaderFeed(reader_, read_buffer_.data(), n) != REDIS_OK) {
    corked_ = false;
    return lost(std::make_exception_ptr(ProtocolError(
        "redis " + options_.describe() + ": protocol error: " + std::string(reader_->errstr))));
  }
  for (;;) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader_, &raw) != REDIS_OK) {
      corked_ = false;
      return lost(std::make_exception_ptr(ProtocolError(
          "redis " + options_.describe() + ": invalid reply: " + std::string(reader_->errstr))));
    }
    if (!raw) break;
    Reply reply = convert(static_cast<redisReply*>(raw));
    freeReplyObject(raw);
    dispatch(std::move(reply));
    if (gen != generation_) {  // a handler closed or dropped the connection
      corked_ = false;
      start_write();
      return;
    }
  }
  corked_ = false;
  start_write();
  start_read();
}

void Connection::dispatch(Reply reply) {
  if (options_.pubsub && handshake_replies_ == 0 && state_ == State::ready) {
    if (push_handler_) push_handler_(std::move(reply));
    return;
  }
  if (inflight_.empty()) {
    // A reply nobody asked for: the stream is out of step; start over.
    return lost(std::make_exception_ptr(ProtocolError(
        "redis " + options_.describe() + ": unexpected reply " + reply.to_string())));
  }
  // Redis answers a protocol error (such as a request too long for a connection that has not
  // authenticated) and then closes the connection without reading on. Start over at once, so
  // that the next request does not go out on a connection the server is closing.
  const bool server_closes = reply.is_error() && reply.str.rfind("ERR Protocol error", 0) == 0;
  const std::string closing_reason = server_closes ? reply.str : std::string();
  Pending p = std::move(inflight_.front());
  inflight_.pop_front();
  if (!p.done && p.handler) p.handler(nullptr, std::move(reply));
  if (server_closes) drop("the server closes the connection after replying " + closing_reason);
}

void Connection::arm_timeout_timer() {
  // One timer per connection, armed for the earliest deadline it knows of. When it fires it
  // scans the queues once; with steady traffic that is about once per timeout period.
  Clock::time_point earliest = Clock::time_point::max();
  if (!inflight_.empty()) earliest = inflight_.front().deadline;
  if (!waiting_.empty()) earliest = std::min(earliest, waiting_.front().deadline);
  if (earliest == Clock::time_point::max()) return;
  if (timeout_timer_at_ != Clock::time_point{} && timeout_timer_at_ <= earliest) return;
  timeout_timer_at_ = earliest;
  auto self = shared_from_this();
  timeout_timer_.expires_at(earliest);
  timeout_timer_.async_wait([this, self](std::error_code ec) {
    if (ec == asio::error::operation_aborted) return;
    timeout_timer_at_ = {};
    on_timeout_timer();
  });
}

void Connection::on_timeout_timer() {
  if (state_ == State::closed) return;
  const auto now = Clock::now();
  Clock::time_point next = Clock::time_point::max();
  bool give_up = false;  // a written request that its caller resends timed out
  auto expire = [&](std::deque<Pending>& queue, bool written) {
    for (auto& p : queue) {
      if (p.done) continue;
      if (p.deadline <= now) {
        p.done = true;
        give_up = give_up || (written && p.give_up_on_timeout);
        if (p.handler) {
          const auto waited = std::chrono::duration_cast<Duration>(now - p.sent_at).count();
          p.handler(std::make_exception_ptr(TimeoutError(
                        "redis " + options_.describe() + ": no reply within " +
                        std::to_string(waited) + " ms" +
                        (written ? "" : " (not connected)"))),
                    {});
        }
      } else {
        next = std::min(next, p.deadline);
      }
    }
  };
  const auto generation = generation_;
  expire(inflight_, true);
  expire(waiting_, false);
  // Its caller resends it: not on this connection, where the resend would queue behind the
  // reply that did not come (execute_resent_on_timeout). Unless a handler dropped it already.
  // Reset (RST), not closed: a copy the kernel has not delivered yet (a silent peer: still in
  // the send queue, retransmitted) is dropped rather than sent on after the resend; a copy
  // already past this host is the release record's business (docs/wire-format.md §1.8).
  if (give_up && generation == generation_ && state_ == State::ready) {
    lost(connection_error("no reply within the timeout to a request that is resent; "
                          "connection given up",
                          true),
         true);
  }
  if (state_ == State::closed) return;
  // Still no answer to a request long past its deadline: treat the server as gone, so the
  // connection is rebuilt instead of queueing behind a dead peer forever.
  if (state_ == State::ready && !inflight_.empty() &&
      now - inflight_.front().sent_at > 2 * options_.timeout + options_.connect_timeout) {
    return lost(connection_error("server stopped answering", true), true);  // RST, as above
  }
  if (next != Clock::time_point::max()) {
    timeout_timer_at_ = next;
    auto self = shared_from_this();
    timeout_timer_.expires_at(next);
    timeout_timer_.async_wait([this, self](std::error_code ec) {
      if (ec == asio::error::operation_aborted) return;
      timeout_timer_at_ = {};
      on_timeout_timer();
    });
  }
}

}  // namespace redisync::net
