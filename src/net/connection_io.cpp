// SPDX-License-Identifier: Apache-2.0
// Connection, its traffic once connected: batching requests into writes, reading and
// dispatching replies in request order, and the per-request timeouts (with giving up a
// connection that stopped answering).
#include "net/connection.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <asio/post.hpp>
#include <exception>
#include <utility>
#include <vector>

#include "net/stream.h"
#include "redisync/errors.h"
#include "sync/trace_points.h"

namespace redisync::net {

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
  auto bytes = spare_write_ ? std::move(spare_write_) : std::make_shared<std::string>();
  bytes->swap(write_buffer_);
  const auto gen = generation_;
  auto self = shared_from_this();
  auto stream = stream_;
  REDISYNC_TRACE_POINT("write");
  stream->async_write(asio::buffer(*bytes), [this, self, gen, stream, bytes](std::error_code ec,
                                                                           std::size_t) {
    if (gen != generation_) return;
    write_in_progress_ = false;
    if (ec) return lost(connection_error("write failed: " + ec.message(), true));
    if (bytes->capacity() <= kSpareWriteMax) {
      bytes->clear();  // all of it written: nothing reads it any more
      spare_write_ = bytes;
    }
    start_write();
  });
}

void Connection::start_read() {
  const auto gen = generation_;
  auto self = shared_from_this();
  auto stream = stream_;  // a TLS read is a composed operation: keep its stream alive
  stream->async_read_some(asio::buffer(read_buffer_),
                          [this, self, gen, stream](std::error_code ec, std::size_t n) {
                             REDISYNC_TRACE_POINT("read");
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

Clock::time_point Connection::written_deadline(const Pending& p) const {
  return last_heard_ > p.sent_at ? p.deadline + (last_heard_ - p.sent_at) : p.deadline;
}

void Connection::on_read(std::size_t n) {
  const auto gen = generation_;
  last_heard_ = Clock::now();
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
    Reply reply = convert_reply(static_cast<redisReply*>(raw));
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
  if (!inflight_.empty()) earliest = written_deadline(inflight_.front());
  if (!waiting_.empty()) earliest = std::min(earliest, waiting_.front().deadline);
  arm_timeout_timer_by(earliest);
}

void Connection::arm_timeout_timer_by(Clock::time_point at) {
  if (at == Clock::time_point::max()) return;
  if (timeout_timer_at_ != Clock::time_point{} && timeout_timer_at_ <= at) return;
  wait_timeout_timer(at);
}

void Connection::wait_timeout_timer(Clock::time_point at) {
  timeout_timer_at_ = at;
  auto self = shared_from_this();
  timeout_timer_.expires_at(at);
  timeout_timer_.async_wait([this, self](std::error_code ec) {
    if (ec == asio::error::operation_aborted) return;
    timeout_timer_at_ = {};
    on_timeout_timer();
  });
}

void Connection::on_timeout_timer() {
  if (state_ == State::closed) return;
  const auto now = Clock::now();
  // Replies waiting to be read (this thread was busy, e.g. starting a burst of 100,000 calls)
  // are the server answering: no written request times out while they wait.
  if (stream_ && stream_->unread_bytes() > 0) last_heard_ = now;
  Clock::time_point next = Clock::time_point::max();
  bool give_up = false;  // a written request that its caller resends timed out
  // The handlers run after both walks: a handler may send on this connection (push_back
  // invalidates every iterator of a deque) or drop it (the queues emptied), and a walk that
  // went on after one crashed the process (a composite's member timing out, issue 36).
  std::vector<std::pair<ReplyHandler, std::exception_ptr>> expired;
  auto expire = [&](std::deque<Pending>& queue, bool written) {
    for (auto& p : queue) {
      if (p.done) continue;
      const auto deadline = written ? written_deadline(p) : p.deadline;
      if (deadline <= now) {
        p.done = true;
        give_up = give_up || (written && p.give_up_on_timeout);
        if (p.handler) {
          const auto waited = std::chrono::duration_cast<Duration>(now - p.sent_at).count();
          expired.emplace_back(std::move(p.handler),
                               std::make_exception_ptr(TimeoutError(
                                   "redis " + options_.describe() + ": no reply within " +
                                   std::to_string(waited) + " ms" +
                                   (written ? "" : " (not connected)"))));
        }
      } else {
        next = std::min(next, deadline);
      }
    }
  };
  const auto generation = generation_;
  expire(inflight_, true);
  expire(waiting_, false);
  for (auto& [handler, error] : expired) handler(error, {});
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
      now - std::max(inflight_.front().sent_at, last_heard_) >
          2 * options_.timeout + options_.connect_timeout) {
    return lost(connection_error("server stopped answering", true), true);  // RST, as above
  }
  // A handler that sent on this connection may have armed the timer for an earlier deadline.
  arm_timeout_timer_by(next);
}

}  // namespace redisync::net
