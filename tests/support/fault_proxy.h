// SPDX-License-Identifier: Apache-2.0
// A fault-injecting TCP proxy for tests: listens on a free loopback port and forwards every
// connection to a redis-server, while the test switches network faults on and off as the run
// goes on (all methods are thread-safe; the proxy runs on its own I/O thread).
//
// Faults (each applies to every connection of this proxy; give each client process its own
// proxy to fault one process and not the others):
//   - blackhole: keep the connections open but forward nothing in one or both directions. The
//     proxy stops reading that side, so the bytes wait in the kernel as they would behind a
//     partition with TCP retransmitting; they flow again once the blackhole is lifted.
//   - delay: every chunk is forwarded `fixed + uniform[0, jitter]` after it was read, per
//     direction, never reordered; set_subscriber_delay() adds a delay to what goes to the
//     client on pub/sub connections only.
//   - reset: close every open connection with a TCP RST (both sides).
//   - refuse: accept new connections and reset them at once (the client sees its connection
//     reset before any reply); open connections stay.
//   - drop a reply: the reply of the Nth request (counted across connections, from when the
//     rule is set) whose command and optional first argument match is never delivered. Replies
//     come in request order on a connection, so the proxy parses the RESP requests and replies
//     and drops exactly that reply. Since TCP cannot lose one reply and deliver the next, the
//     connection is then reset (AfterDrop::reset) or stalls (AfterDrop::stall: nothing more is
//     forwarded to that client, as if the partition began right after the server received the
//     request). Connections that subscribed (pub/sub pushes) are not matched.
//   - withhold a request: the Nth matching request (counted as for a dropped reply) is not
//     forwarded, nor is anything its connection sends after it, and nothing more is forwarded
//     to that client (a partition that began as the request left the client; requests before
//     it in the same chunk still run, their replies stall). The proxy keeps its arguments (withheld()): the test delivers that copy itself
//     whenever it likes, e.g. after the client gave up the connection and resent it on
//     another one (a first copy overtaken by its resend).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace redisync::test {

enum class Direction { to_server, to_client, both };
enum class AfterDrop { reset, stall };

/// Which requests a drop rule counts: `command` (case-insensitive), and if set, a first
/// argument equal to `first_arg` (case-insensitive: e.g. an EVALSHA's sha) and some argument
/// containing `arg_containing` (case-sensitive: e.g. a key prefix such as a release record's).
struct RequestMatch {
  std::string command = {};
  std::string first_arg = {};
  std::string arg_containing = {};
};

struct ProxyStats {
  long long accepted = 0;         // connections forwarded
  long long refused = 0;          // connections reset at accept (refuse on)
  long long open = 0;             // connections open now
  long long resets = 0;           // connections reset by reset_connections() or a drop rule
  long long requests = 0;         // RESP requests seen (client -> server)
  long long matched = 0;          // requests matching the drop rule
  long long dropped_replies = 0;  // replies dropped
  long long withheld = 0;         // requests withheld (withhold_request)
  long long bytes_to_server = 0;
  long long bytes_to_client = 0;
};

class FaultProxy {
 public:
  /// Starts forwarding 127.0.0.1:port() to upstream_host:upstream_port. Throws
  /// std::runtime_error if no loopback port can be bound.
  explicit FaultProxy(std::uint16_t upstream_port, std::string upstream_host = "127.0.0.1");
  /// Stops the I/O thread and closes every connection.
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  std::uint16_t port() const;
  /// "redis://127.0.0.1:<port>".
  std::string url() const;

  void set_blackhole(Direction direction, bool on);
  /// fixed and jitter must be >= 0 (std::invalid_argument otherwise); 0/0 turns delay off.
  void set_delay(Direction direction, std::chrono::milliseconds fixed,
                 std::chrono::milliseconds jitter = std::chrono::milliseconds(0));
  /// Delays what goes to the client on connections that subscribed (pub/sub messages) by
  /// `delay` more than the rest, never reordered on one connection; 0 turns it off. The other
  /// connections are not delayed: a message reaches the client after replies sent later.
  void set_subscriber_delay(std::chrono::milliseconds delay);
  void set_refuse(bool on);
  /// New connections are forwarded to 127.0.0.1:port from now on (as a virtual address moved
  /// to another server); open connections stay where they are (reset them to move them).
  void set_upstream(std::uint16_t port);
  /// Resets every open connection; returns how many. Waits until done (bounded by the
  /// proxy's I/O thread; never call it from a callback on that thread).
  int reset_connections();
  /// Drops the reply of the nth (1-based) request from now on that matches. Replaces an
  /// earlier rule. nth < 1 or an empty command: std::invalid_argument.
  void drop_reply(const RequestMatch& match, int nth, AfterDrop after = AfterDrop::reset);
  /// Withholds the nth (1-based) request from now on that matches (see the header comment).
  /// Replaces an earlier drop or withhold rule. nth < 1 or an empty command:
  /// std::invalid_argument.
  void withhold_request(const RequestMatch& match, int nth = 1);
  /// The arguments of every request withheld so far, in order.
  std::vector<std::vector<std::string>> withheld() const;
  /// All faults off (blackhole, delay, refuse, the drop or withhold rule); connections stay
  /// open (a withheld connection stays stalled).
  void clear();

  ProxyStats stats() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace redisync::test
