// SPDX-License-Identifier: Apache-2.0
// Runs commands and embedded Lua scripts against the deployment: picks the connection (the
// single server, the Sentinel's current master, or in a cluster the master of the first key's
// slot, following MOVED and ASK), calls scripts by SHA (loading each once per connection,
// again after NOSCRIPT: net/script_loads.h), and resends requests after connection errors
// following Config::retry_attempts / retry_interval.
//
// Threading: io thread only, like Connection.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <asio/io_context.hpp>
#include <asio/ssl/context.hpp>
#include <asio/steady_timer.hpp>

#include "lua/scripts.h"
#include "net/cluster.h"
#include "net/connection.h"
#include "net/sentinel.h"
#include "net/subscriber.h"
#include "redisync/config.h"

namespace redisync::net {

/// When a request that failed with ConnectionError may be sent again.
enum class Retry {
  if_unsent,  ///< only when it surely never reached the server (default; safe for any command)
  always,     ///< also when it may have run: for idempotent steps (reads, deduplicated releases)
  never,
  /// A step deduplicated by a request record (lock releases): resent like `always`, and also
  /// after a timeout. A timeout gives up the connection it was sent on (replies come in order:
  /// a resend there would wait behind the reply that did not come), so the resend goes to a
  /// fresh one and is answered from the record if the first copy ran.
  recorded,
  /// The caller resends it itself after a timeout or a drop (recorded steps with their own
  /// resend window, sync/hold/recorded_step.h): resent here only when surely unsent, like
  /// `if_unsent`; a timeout gives up its connection, like `recorded`.
  by_caller,
};

class Executor {
 public:
  Executor(asio::io_context& io, const Config& config);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  /// Runs one command. In a cluster it is routed by `key`, or when that is empty by the
  /// command's own first key (args[1]; keyless commands such as INFO go to any master).
  void execute(std::vector<std::string> args, ReplyHandler handler, Retry retry = Retry::if_unsent,
               const std::string& key = {});

  /// Runs an embedded script with EVALSHA, behind a SCRIPT LOAD the first time on a
  /// connection; after NOSCRIPT it loads it again, and falls back to EVAL if that fails.
  void eval(const lua::Script& script, std::vector<std::string> keys,
            std::vector<std::string> args, ReplyHandler handler, Retry retry = Retry::if_unsent);

  /// Runs a lock write step, then, when the master has replicas and
  /// Config::check_lock_synced_slaves is on, WAIT for them (docs/wire-format.md §1.7). `done` gets
  /// the step's reply and how many replicas acknowledged it (-1: no WAIT was needed). `resent`,
  /// when given, is set to true if the step is sent again after a copy that may have reached
  /// the server (a timeout or a connection lost after sending): that copy may still arrive.
  /// `resends_unacked`: how many times a step no replica acknowledged is sent again (a step
  /// safe to repeat, e.g. a recorded release), before `done` hears of the last one.
  void eval_acked(const lua::Script& script, std::vector<std::string> keys,
                  std::vector<std::string> args,
                  std::function<void(std::exception_ptr, Reply, int acked)> done,
                  Retry retry = Retry::if_unsent, std::shared_ptr<bool> resent = nullptr,
                  int resends_unacked = 0);
  /// Replicas the master reported connected at the last check (INFO replication; in a
  /// cluster, the largest count among the masters).
  int replicas() const;

  /// Requests sent and not yet answered on the command connections (not pub/sub).
  std::size_t in_flight() const;
  /// How long the oldest of them has waited at `now` (in a cluster, the longest of any
  /// node's): a request sent now is answered no sooner than the backlog ahead of it is read.
  Duration reply_lag(Clock::time_point now) const;

  /// Cluster topology: loads the slot map and detects sharded pub/sub; `done(error)` gets a
  /// ConnectionError naming the seeds when none answers. Other topologies: done(nullptr).
  void start(std::function<void(std::exception_ptr)> done);
  /// True when channels use SSUBSCRIBE/SPUBLISH (cluster nodes that support sharded pub/sub).
  bool sharded_pubsub() const { return router_ && router_->sharded_pubsub(); }
  /// The cluster router (nullptr unless the topology is cluster).
  ClusterRouter* cluster() { return router_.get(); }

  /// Redirects followed so far (MOVED, ASK) and TRYAGAIN/CLUSTERDOWN waits, for tests.
  struct Stats {
    std::uint64_t moved = 0;
    std::uint64_t ask = 0;
    std::uint64_t try_again = 0;
  };
  const Stats& stats() const { return stats_; }

  /// The shared pub/sub subscriber of this deployment (one connection per server).
  Subscriber& subscriber() { return *subscriber_; }

  /// Fails everything pending with ClientClosedError and stops reconnecting.
  void close();
  const Config& config() const { return config_; }
  asio::io_context& io() { return io_; }
  /// Where this executor points, for error messages.
  std::string describe() const { return config_.describe(); }

  /// Lowercase hex SHA-1 of a script's source (what EVALSHA takes).
  static const std::string& sha1_of(const lua::Script& script);

 private:
  void run(std::shared_ptr<struct Attempt> attempt);
  /// eval_acked() from its attempt on.
  void run_acked(std::shared_ptr<struct Attempt> attempt,
                 std::function<void(std::exception_ptr, Reply, int acked)> done,
                 int resends_unacked);
  /// Sends the attempt's request on `connection` (resent_on_timeout for the recorded kinds).
  void send_on(Connection& connection, const std::shared_ptr<struct Attempt>& attempt,
               ReplyHandler handler);
  /// A script call about to go on `connection`: a SCRIPT LOAD ahead of it when the server
  /// behind it has not been sent the script yet, or EVAL where loading is refused.
  void prepare_script(Connection& connection, struct Attempt& attempt);
  void run_cluster(std::shared_ptr<struct Attempt> attempt);
  bool handle_cluster_reply(const std::shared_ptr<struct Attempt>& attempt, const Reply& reply,
                            const std::string& node_host);
  bool retry_after_error(const std::shared_ptr<struct Attempt>& attempt,
                         std::exception_ptr error);
  /// Runs the attempt again after `delay` (fails it with ClientClosedError if closed by then).
  void run_after(const std::shared_ptr<struct Attempt>& attempt, Duration delay);
  /// A new attempt with `retry` and its retry budget.
  std::shared_ptr<struct Attempt> new_attempt(Retry retry) const;
  /// A new attempt running `script` by EVALSHA, routed by its first key.
  std::shared_ptr<struct Attempt> eval_attempt(const lua::Script& script,
                                               std::vector<std::string> keys,
                                               std::vector<std::string> args,
                                               Retry retry) const;
  void refresh_replicas();

  asio::io_context& io_;
  Config config_;
  std::unique_ptr<asio::ssl::context> tls_context_;
  std::shared_ptr<SentinelMonitor> sentinel_;  // sentinel topology only
  std::unique_ptr<ClusterRouter> router_;       // cluster topology only
  std::shared_ptr<Connection> connection_;      // single and sentinel topologies
  std::unique_ptr<Subscriber> subscriber_;
  int replicas_ = 0;
  std::unique_ptr<asio::steady_timer> replica_timer_;  // re-reads the replica count each second
  bool closed_ = false;
  Stats stats_;
};

/// Connection options for `config`'s single server (or one resolved node).
ConnectionOptions connection_options(const Config& config, bool pubsub);

/// How often the pub/sub connections PING (Subscriber::set_heartbeat): in grant handoff a
/// tenth of the grant lease (at least 10 ms), so that a grant is known to be made at most
/// about that long before its message came; zero (never) in wake handoff.
Duration pubsub_heartbeat(const Config& config);

/// Makes the OpenSSL context described by config.tls_options; throws ConfigError on bad files.
std::unique_ptr<asio::ssl::context> make_tls_context(const Config& config);

/// The one mapping of an error reply to an exception naming `what` (the operation and object):
/// NOAUTH / WRONGPASS become AuthError (a configuration problem, not a failed operation), any
/// other error reply ServerError. Made without throwing, so the I/O thread can hand it over
/// without passing it through a catch block.
std::exception_ptr server_error(const Reply& reply, const std::string& what);
/// server_error(), thrown.
[[noreturn]] void throw_server_error(const Reply& reply, const std::string& what);

}  // namespace redisync::net
