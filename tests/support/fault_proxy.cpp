// SPDX-License-Identifier: Apache-2.0
#include "support/fault_proxy.h"

#include <algorithm>
#include <array>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <cctype>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "support/resp_scan.h"

namespace redisync::test {

namespace {

using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

constexpr int kToServer = 0;
constexpr int kToClient = 1;
constexpr auto kPoll = std::chrono::milliseconds(2);  // how often a blackholed side re-checks

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool applies(Direction d, int side) {
  return d == Direction::both || (d == Direction::to_server) == (side == kToServer);
}

}  // namespace

struct FaultProxy::Impl {
  struct Rule {
    std::string command;  // upper case
    std::string arg;      // upper case; "" = any
    std::string containing;  // "" = any
    int nth = 1;
    AfterDrop after = AfterDrop::reset;
    long long seen = 0;
    bool withhold = false;  // withhold_request(): the request itself is not forwarded
  };

  struct Chunk {
    Clock::time_point at;
    std::string data;
    bool reset = false;  // reset the connection when the writer reaches this point
    bool stall = false;  // stall the replies when the writer reaches this point
  };

  struct Conn : std::enable_shared_from_this<Conn> {
    explicit Conn(asio::io_context& io, tcp::socket c)
        : client(std::move(c)), server(io), wake{asio::steady_timer(io), asio::steady_timer(io)} {}
    tcp::socket client;
    tcp::socket server;
    std::array<asio::steady_timer, 2> wake;  // per direction: the writer waits on it
    std::array<std::deque<Chunk>, 2> queue;
    std::array<Clock::time_point, 2> last_at{};
    bool closed = false;
    bool tracked = true;  // requests and replies still paired (no pub/sub, RESP2 parsed)
    bool stalled = false;  // a drop rule stalled the replies (the writer reached the point)
    bool stalling = false;  // ... and nothing read after the dropped reply is forwarded
    bool withholding = false;  // a request was withheld: nothing more goes to the server
    bool subscriber = false;   // sent SUBSCRIBE, PSUBSCRIBE or SSUBSCRIBE (a pub/sub connection)
    std::string requests;  // unparsed request bytes
    std::string replies;   // reply bytes not yet forwarded (an incomplete frame)
    std::deque<bool> pending;  // per request in flight: drop its reply

    tcp::socket& from(int side) { return side == kToServer ? client : server; }
    tcp::socket& to(int side) { return side == kToServer ? server : client; }
  };

  Impl(std::uint16_t upstream_port, std::string upstream_host)
      : acceptor(io), upstream(asio::ip::make_address(upstream_host), upstream_port) {
    tcp::endpoint local(asio::ip::make_address("127.0.0.1"), 0);
    acceptor.open(local.protocol());
    acceptor.set_option(tcp::acceptor::reuse_address(true));
    acceptor.bind(local);
    acceptor.listen();
    port = acceptor.local_endpoint().port();
  }

  // --- I/O thread ---

  awaitable<void> accept_loop() {
    for (;;) {
      std::error_code ec;
      tcp::socket socket = co_await acceptor.async_accept(asio::redirect_error(use_awaitable, ec));
      if (ec) {
        if (!acceptor.is_open()) co_return;
        continue;
      }
      bool refuse_now = false;
      {
        std::lock_guard<std::mutex> lock(mu);
        refuse_now = refuse;
        if (refuse_now) ++stats.refused;
      }
      if (refuse_now) {
        hard_close(socket);
        continue;
      }
      auto conn = std::make_shared<Conn>(io, std::move(socket));
      asio::co_spawn(io, connect(conn), asio::detached);
    }
  }

  awaitable<void> connect(std::shared_ptr<Conn> conn) {
    std::error_code ec;
    tcp::endpoint target;
    {
      std::lock_guard<std::mutex> lock(mu);
      target = upstream;
    }
    co_await conn->server.async_connect(target, asio::redirect_error(use_awaitable, ec));
    if (ec || stopping) {
      hard_close(conn->client);
      co_return;
    }
    conn->client.set_option(tcp::no_delay(true), ec);
    conn->server.set_option(tcp::no_delay(true), ec);
    conns.insert(conn);
    {
      std::lock_guard<std::mutex> lock(mu);
      ++stats.accepted;
      ++stats.open;
    }
    for (int side : {kToServer, kToClient}) {
      asio::co_spawn(io, read_loop(conn, side), asio::detached);
      asio::co_spawn(io, write_loop(conn, side), asio::detached);
    }
  }

  bool held(const Conn& conn, int side) {
    if (side == kToClient && conn.stalled) return true;
    std::lock_guard<std::mutex> lock(mu);
    return blackhole[side];
  }

  awaitable<void> sleep(Conn& conn, Clock::duration d) {
    asio::steady_timer t(io);
    t.expires_after(d);
    std::error_code ec;
    co_await t.async_wait(asio::redirect_error(use_awaitable, ec));
    (void)conn;
  }

  awaitable<void> read_loop(std::shared_ptr<Conn> conn, int side) {
    std::vector<char> buf(16 * 1024);
    while (!conn->closed) {
      if (held(*conn, side)) {
        co_await sleep(*conn, kPoll);
        continue;
      }
      std::error_code ec;
      const size_t n = co_await conn->from(side).async_read_some(
          asio::buffer(buf), asio::redirect_error(use_awaitable, ec));
      if (conn->closed) co_return;
      if (ec) {
        close(*conn, false);
        co_return;
      }
      std::string_view data(buf.data(), n);
      if (side == kToServer) {
        if (conn->withholding) continue;  // behind the withheld request: never forwarded
        const size_t forward = on_requests(*conn, data);
        if (forward > 0) enqueue(*conn, side, std::string(data.substr(0, forward)), false);
      } else {
        on_replies(*conn, data);
      }
    }
  }

  awaitable<void> write_loop(std::shared_ptr<Conn> conn, int side) {
    auto& queue = conn->queue[static_cast<size_t>(side)];
    auto& wake = conn->wake[static_cast<size_t>(side)];
    while (!conn->closed) {
      std::error_code ec;
      if (queue.empty()) {
        wake.expires_at(Clock::time_point::max());
        co_await wake.async_wait(asio::redirect_error(use_awaitable, ec));
        continue;
      }
      if (Clock::now() < queue.front().at) {
        wake.expires_at(queue.front().at);
        co_await wake.async_wait(asio::redirect_error(use_awaitable, ec));
        continue;
      }
      if (held(*conn, side)) {
        co_await sleep(*conn, kPoll);
        continue;
      }
      Chunk chunk = std::move(queue.front());
      queue.pop_front();
      if (chunk.reset) {
        close(*conn, true);
        co_return;
      }
      if (chunk.stall) {
        conn->stalled = true;
        continue;
      }
      co_await asio::async_write(conn->to(side), asio::buffer(chunk.data),
                                 asio::redirect_error(use_awaitable, ec));
      if (ec) {
        close(*conn, false);
        co_return;
      }
      std::lock_guard<std::mutex> lock(mu);
      (side == kToServer ? stats.bytes_to_server : stats.bytes_to_client) +=
          static_cast<long long>(chunk.data.size());
    }
  }

  void enqueue(Conn& conn, int side, std::string data, bool reset, bool stall = false) {
    Clock::duration delay{};
    {
      std::lock_guard<std::mutex> lock(mu);
      const auto jitter = delay_jitter[side].count();
      delay = delay_fixed[side] +
              std::chrono::milliseconds(
                  jitter > 0 ? std::uniform_int_distribution<long long>(0, jitter)(rng) : 0);
      if (side == kToClient && conn.subscriber) delay += subscriber_delay;
    }
    auto& last = conn.last_at[static_cast<size_t>(side)];
    last = std::max(last, Clock::now() + delay);  // never reordered
    conn.queue[static_cast<size_t>(side)].push_back(Chunk{last, std::move(data), reset, stall});
    conn.wake[static_cast<size_t>(side)].cancel();
  }

  // Client -> server bytes: note for each request whether its reply is to be dropped. Returns
  // how many bytes of `data` to forward: all, unless a request in it is withheld (then the
  // bytes before that request; its start may lie in an earlier chunk, already forwarded: the
  // server then waits for the rest, which never comes).
  size_t on_requests(Conn& conn, std::string_view data) {
    if (!conn.tracked) return data.size();
    const size_t carried = conn.requests.size();  // bytes of earlier chunks, already forwarded
    conn.requests.append(data);
    size_t at = 0;
    std::vector<std::string> args;
    for (;;) {
      const long len = resp_frame_length(std::string_view(conn.requests).substr(at));
      if (len == 0) break;
      if (len < 0 || !resp_request_args(std::string_view(conn.requests).substr(at, static_cast<size_t>(len)), &args)) {
        untrack(conn);
        return data.size();
      }
      const size_t frame = at;  // where this request starts in conn.requests
      at += static_cast<size_t>(len);
      const std::string cmd = upper(args[0]);
      if (cmd == "SUBSCRIBE" || cmd == "PSUBSCRIBE" || cmd == "SSUBSCRIBE") conn.subscriber = true;
      if (cmd == "SUBSCRIBE" || cmd == "PSUBSCRIBE" || cmd == "SSUBSCRIBE" || cmd == "MONITOR" ||
          cmd == "HELLO") {
        untrack(conn);  // pushes from now on: replies no longer pair with requests
        return data.size();
      }
      bool drop = false;
      bool withhold = false;
      {
        std::lock_guard<std::mutex> lock(mu);
        ++stats.requests;
        if (rule && cmd == rule->command &&
            (rule->arg.empty() || (args.size() > 1 && upper(args[1]) == rule->arg)) &&
            (rule->containing.empty() ||
             std::any_of(args.begin() + 1, args.end(), [&](const std::string& a) {
               return a.find(rule->containing) != std::string::npos;
             }))) {
          ++stats.matched;
          const bool hit = ++rule->seen == rule->nth;
          withhold = hit && rule->withhold;
          drop = hit && !rule->withhold;
          if (withhold) {
            ++stats.withheld;
            withheld.push_back(args);
          }
        }
      }
      if (withhold) {
        // Nothing from here on reaches the server, and nothing more reaches the client (the
        // partition began as the request left the client).
        const size_t start = frame >= carried ? frame - carried : 0;
        conn.withholding = true;
        enqueue(conn, kToClient, {}, false, true);
        untrack(conn);
        return start;
      }
      conn.pending.push_back(drop);
    }
    conn.requests.erase(0, at);
    return data.size();
  }

  // Server -> client bytes: forward whole replies, leaving out one to be dropped.
  void on_replies(Conn& conn, std::string_view data) {
    if (conn.stalling) return;
    if (!conn.tracked) {
      enqueue(conn, kToClient, std::string(data), false);
      return;
    }
    conn.replies.append(data);
    std::string out;
    size_t at = 0;
    for (;;) {
      const long len = resp_frame_length(std::string_view(conn.replies).substr(at));
      if (len == 0) break;
      if (len < 0 || conn.pending.empty()) {  // not a reply we can pair: forward as is
        out.append(conn.replies, at);
        at = conn.replies.size();
        untrack(conn);
        break;
      }
      const bool drop = conn.pending.front();
      conn.pending.pop_front();
      if (!drop) {
        out.append(conn.replies, at, static_cast<size_t>(len));
        at += static_cast<size_t>(len);
        continue;
      }
      AfterDrop after = AfterDrop::reset;
      {
        std::lock_guard<std::mutex> lock(mu);
        ++stats.dropped_replies;
        after = dropped_after;
      }
      if (!out.empty()) enqueue(conn, kToClient, std::move(out), false);
      conn.replies.clear();
      conn.pending.clear();
      if (after == AfterDrop::reset) {
        enqueue(conn, kToClient, {}, true);
      } else {
        conn.stalling = true;
        enqueue(conn, kToClient, {}, false, true);
      }
      untrack(conn);
      return;
    }
    conn.replies.erase(0, at);
    if (!out.empty()) enqueue(conn, kToClient, std::move(out), false);
  }

  void untrack(Conn& conn) {
    conn.tracked = false;
    conn.requests.clear();
    conn.pending.clear();
    if (!conn.replies.empty() && !conn.stalling) {
      std::string rest = std::move(conn.replies);
      conn.replies.clear();
      enqueue(conn, kToClient, std::move(rest), false);
    }
  }

  static void hard_close(tcp::socket& s) {
    std::error_code ec;
    if (!s.is_open()) return;
    s.set_option(asio::socket_base::linger(true, 0), ec);  // RST, not FIN
    s.close(ec);
  }

  void close(Conn& conn, bool reset) {
    if (conn.closed) return;
    conn.closed = true;
    std::error_code ec;
    if (reset) {
      hard_close(conn.client);
      hard_close(conn.server);
    } else {
      conn.client.close(ec);
      conn.server.close(ec);
    }
    for (auto& t : conn.wake) t.cancel();
    {
      std::lock_guard<std::mutex> lock(mu);
      --stats.open;
      if (reset) ++stats.resets;
    }
    conns.erase(conn.shared_from_this());
  }

  int reset_all() {
    int n = 0;
    const auto all = conns;  // close() erases
    for (const auto& c : all) {
      close(*c, true);
      ++n;
    }
    return n;
  }

  asio::io_context io;
  tcp::acceptor acceptor;
  tcp::endpoint upstream;  // guarded by mu (set_upstream)
  std::uint16_t port = 0;
  std::thread thread;
  std::set<std::shared_ptr<Conn>> conns;  // I/O thread only
  bool stopping = false;                  // I/O thread only

  mutable std::mutex mu;  // guards everything below
  std::array<bool, 2> blackhole{false, false};
  std::array<std::chrono::milliseconds, 2> delay_fixed{};
  std::array<std::chrono::milliseconds, 2> delay_jitter{};
  std::chrono::milliseconds subscriber_delay{0};
  bool refuse = false;
  std::optional<Rule> rule;
  std::vector<std::vector<std::string>> withheld;  // withhold_request(): what was kept back
  AfterDrop dropped_after = AfterDrop::reset;
  std::mt19937_64 rng{std::random_device{}()};
  ProxyStats stats;
};

FaultProxy::FaultProxy(std::uint16_t upstream_port, std::string upstream_host) {
  try {
    impl_ = std::make_shared<Impl>(upstream_port, std::move(upstream_host));
  } catch (const std::system_error& e) {
    throw std::runtime_error(std::string("FaultProxy: cannot listen on loopback: ") + e.what());
  }
  asio::co_spawn(impl_->io, impl_->accept_loop(), asio::detached);
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

FaultProxy::~FaultProxy() {
  asio::post(impl_->io, [impl = impl_.get()] {
    impl->stopping = true;
    std::error_code ec;
    impl->acceptor.close(ec);
    impl->reset_all();
  });
  impl_->thread.join();  // every coroutine ends once its sockets and timers are closed
}

std::uint16_t FaultProxy::port() const { return impl_->port; }

std::string FaultProxy::url() const { return "redis://127.0.0.1:" + std::to_string(port()); }

void FaultProxy::set_blackhole(Direction direction, bool on) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (int side : {kToServer, kToClient}) {
    if (applies(direction, side)) impl_->blackhole[static_cast<size_t>(side)] = on;
  }
}

void FaultProxy::set_delay(Direction direction, std::chrono::milliseconds fixed,
                           std::chrono::milliseconds jitter) {
  if (fixed.count() < 0 || jitter.count() < 0) {
    throw std::invalid_argument("FaultProxy::set_delay: fixed and jitter must be >= 0");
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  for (int side : {kToServer, kToClient}) {
    if (!applies(direction, side)) continue;
    impl_->delay_fixed[static_cast<size_t>(side)] = fixed;
    impl_->delay_jitter[static_cast<size_t>(side)] = jitter;
  }
}

void FaultProxy::set_subscriber_delay(std::chrono::milliseconds delay) {
  if (delay.count() < 0) {
    throw std::invalid_argument("FaultProxy::set_subscriber_delay: delay must be >= 0");
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->subscriber_delay = delay;
}

void FaultProxy::set_upstream(std::uint16_t port) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->upstream = tcp::endpoint(asio::ip::make_address("127.0.0.1"), port);
}

void FaultProxy::set_refuse(bool on) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->refuse = on;
}

int FaultProxy::reset_connections() {
  auto done = std::make_shared<std::promise<int>>();
  auto result = done->get_future();
  asio::post(impl_->io, [impl = impl_.get(), done] { done->set_value(impl->reset_all()); });
  if (result.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    throw std::runtime_error("FaultProxy::reset_connections: the proxy thread did not answer");
  }
  return result.get();
}

void FaultProxy::drop_reply(const RequestMatch& match, int nth, AfterDrop after) {
  if (match.command.empty() || nth < 1) {
    throw std::invalid_argument("FaultProxy::drop_reply: needs a command and nth >= 1");
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->rule = Impl::Rule{upper(match.command), upper(match.first_arg), match.arg_containing,
                           nth, after, 0};
  impl_->dropped_after = after;
}

void FaultProxy::withhold_request(const RequestMatch& match, int nth) {
  if (match.command.empty() || nth < 1) {
    throw std::invalid_argument("FaultProxy::withhold_request: needs a command and nth >= 1");
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->rule = Impl::Rule{upper(match.command), upper(match.first_arg), match.arg_containing,
                           nth, AfterDrop::stall, 0, true};
}

std::vector<std::vector<std::string>> FaultProxy::withheld() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->withheld;
}

void FaultProxy::clear() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->blackhole = {false, false};
  impl_->delay_fixed = {};
  impl_->delay_jitter = {};
  impl_->subscriber_delay = std::chrono::milliseconds(0);
  impl_->refuse = false;
  impl_->rule.reset();
}

ProxyStats FaultProxy::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

}  // namespace redisync::test
