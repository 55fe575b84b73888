#include "net/executor.h"

#include <openssl/evp.h>

#include <asio/steady_timer.hpp>
#include <map>
#include <mutex>

#include "net/cluster_slot.h"
#include "net/server_text.h"
#include "redisync/errors.h"

namespace redisync::net {

namespace {

constexpr int kMaxRedirects = 5;  // MOVED/ASK per request before giving up

// Where a request ran: the connection (for a pipelined WAIT) and its master's replicas.
struct Target {
  std::shared_ptr<Connection> connection;
  int replicas = 0;
};
using RoutedHandler = std::function<void(std::exception_ptr, Reply, const Target&)>;

RoutedHandler plain(ReplyHandler handler) {
  return [handler = std::move(handler)](std::exception_ptr e, Reply r, const Target&) {
    handler(e, std::move(r));
  };
}

}  // namespace

// One request with its retry budget; lives until the handler has been called.
struct Attempt {
  std::vector<std::string> args;
  RoutedHandler handler;
  Retry retry;
  int retries_left;
  std::string_view eval_source;  // set for EVALSHA: the script text to send after NOSCRIPT
  bool reloaded = false;
  // Cluster topology:
  int slot = -1;                      // the routing key's slot; -1: keyless (any master)
  std::shared_ptr<ClusterNode> ask;   // ASK target: send ASKING + the request there next
  int redirects = 0;
  Clock::time_point started = Clock::now();
  Duration try_again_delay{10};
  std::shared_ptr<bool> resent;  // eval_acked(): set when resent after a maybe-sent copy
};

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

std::exception_ptr server_error(const Reply& reply, const std::string& what) {
  // A server that wants a password we did not give (or rejects the one we gave) answers
  // every command so: that is a configuration problem, not a failed operation.
  // A request too large for an unauthenticated connection gets a protocol error instead of
  // NOAUTH (Redis refuses long multibulk requests before AUTH), then the connection closes.
  if (reply.str.rfind("NOAUTH", 0) == 0 || reply.str.rfind("WRONGPASS", 0) == 0 ||
      reply.str.rfind("ERR Protocol error: unauthenticated", 0) == 0) {
    return std::make_exception_ptr(
        AuthError(what + ": server replied " + reply.str +
                  " (set the password in the URL or Config::password / Config::username)"));
  }
  return std::make_exception_ptr(ServerError(what + ": server replied " + reply.str, reply.str));
}

void throw_server_error(const Reply& reply, const std::string& what) {
  std::rethrow_exception(server_error(reply, what));
}

const std::string& Executor::sha1_of(const lua::Script& script) {
  static std::mutex mutex;
  static std::map<const void*, std::string> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(script.source.data());
  if (it != cache.end()) return it->second;
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(script.source.data(), script.source.size(), digest, &len, EVP_sha1(), nullptr);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return cache.emplace(script.source.data(), std::move(out)).first->second;
}

Executor::Executor(asio::io_context& io, const Config& config) : io_(io), config_(config) {
  if (config_.tls) tls_context_ = make_tls_context(config_);
  if (config_.topology == Topology::cluster) {
    // Commands go to the master of each key's slot; channels to the master of theirs.
    router_ = std::make_unique<ClusterRouter>(io_, config_, tls_context_.get());
    auto route = [this](const std::string& channel) -> std::shared_ptr<Connection> {
      auto node = router_->node_for_slot(key_slot(channel));
      if (!node) return nullptr;
      if (!node->pubsub) {
        node->pubsub = Connection::create(io_, router_->node_options(node->host, node->port, true),
                                          tls_context_.get());
      }
      return node->pubsub;
    };
    subscriber_ = std::make_unique<Subscriber>(
        io_, route, [this] { router_->request_refresh(); }, config_.subscription_linger,
        config_.subscription_timeout);
    router_->on_map_change([this] { subscriber_->reroute(); });
    return;
  }
  auto command_options = connection_options(config_, false);
  auto pubsub_options = connection_options(config_, true);
  if (config_.topology == Topology::sentinel) {
    // Every (re)connect asks the sentinels where the master is now, and refuses a server
    // that is no longer a master.
    sentinel_ = std::make_shared<SentinelMonitor>(io_, config_, tls_context_.get());
    std::weak_ptr<SentinelMonitor> weak = sentinel_;
    auto resolve = [weak](ConnectionOptions::ResolveDone done) {
      if (auto s = weak.lock()) return s->resolve(std::move(done));
      done(std::make_exception_ptr(ClientClosedError("client closed")), {}, 0);
    };
    for (auto* o : {&command_options, &pubsub_options}) {
      o->resolve = resolve;
      o->require_master = true;
      o->host = config_.sentinel_master;  // shown in messages until resolved
      o->port = 0;
    }
  }
  connection_ = Connection::create(io_, command_options, tls_context_.get());
  subscriber_ = std::make_unique<Subscriber>(
      io_, Connection::create(io_, pubsub_options, tls_context_.get()),
      config_.subscription_linger, config_.subscription_timeout);
  if (config_.check_lock_synced_slaves) {
    replica_timer_ = std::make_unique<asio::steady_timer>(io_);
    connection_->set_state_handler([this](bool up) {
      if (up) refresh_replicas();
    });
  }
  if (sentinel_) {
    sentinel_->start([this](const std::string& host, std::uint16_t port) {
      // Failover: move both connections to the new master now. The subscriber resubscribes
      // and wakes every waiter, so nobody sleeps through a release made during the switch.
      const std::string where = host + ":" + std::to_string(port);
      for (Connection* c : {connection_.get(), &subscriber_->connection()}) {
        if (c->options().host != host || c->options().port != port) {
          c->drop("master switched to " + where);
        }
      }
    });
  }
}

Executor::~Executor() = default;

void Executor::start(std::function<void(std::exception_ptr)> done) {
  if (!router_) return done(nullptr);
  router_->refresh([this, done = std::move(done)](std::exception_ptr error) {
    if (!error) subscriber_->set_sharded(router_->sharded_pubsub());
    done(error);
  });
}

void Executor::refresh_replicas() {
  if (closed_) return;
  execute({"INFO", "replication"}, [this](std::exception_ptr error, Reply reply) {
    if (closed_) return;
    if (!error && reply.is_string()) {
      // A malformed count keeps the last one read.
      if (const auto count = parse_connected_replicas(reply.str)) replicas_ = *count;
    }
    // Replicas come and go; keep the count fresh while the connection is up.
    replica_timer_->expires_after(std::chrono::seconds(1));
    replica_timer_->async_wait([this](std::error_code ec) {
      if (!ec && connection_->ready()) refresh_replicas();
    });
  }, Retry::never);
}

void Executor::eval_acked(const lua::Script& script, std::vector<std::string> keys,
                          std::vector<std::string> args,
                          std::function<void(std::exception_ptr, Reply, int)> done, Retry retry,
                          std::shared_ptr<bool> resent) {
  auto a = std::make_shared<Attempt>();
  a->resent = std::move(resent);
  a->args.reserve(3 + keys.size() + args.size());
  a->args.push_back("EVALSHA");
  a->args.push_back(sha1_of(script));
  a->args.push_back(std::to_string(keys.size()));
  if (router_ && !keys.empty()) a->slot = key_slot(keys[0]);
  for (auto& k : keys) a->args.push_back(std::move(k));
  for (auto& v : args) a->args.push_back(std::move(v));
  a->eval_source = script.source;
  a->retry = retry;
  a->retries_left = retry == Retry::never ? 0 : config_.retry_attempts;
  a->handler = [this, done = std::move(done)](std::exception_ptr error, Reply reply,
                                              const Target& target) {
    // The count is read now: an INFO sent ahead of the script has been answered by now.
    const int replicas = config_.check_lock_synced_slaves ? target.replicas : 0;
    if (error || replicas == 0 || reply.is_error() || !target.connection) {
      return done(error, std::move(reply), -1);
    }
    // WAIT goes to the server that ran the step (in a cluster: that slot's master).
    auto step = std::make_shared<Reply>(std::move(reply));
    target.connection->execute(
        {"WAIT", std::to_string(replicas), std::to_string(config_.slaves_sync_timeout.count())},
        [step, done](std::exception_ptr wait_error, Reply acked) {
          // A failed WAIT counts as "not acknowledged".
          done(nullptr, std::move(*step),
               wait_error || !acked.is_integer() ? 0 : static_cast<int>(acked.integer));
        });
  };
  run(std::move(a));
}

std::size_t Executor::in_flight() const {
  if (router_) return router_->in_flight();
  return connection_ ? connection_->in_flight() : 0;
}

void Executor::close() {
  closed_ = true;
  if (replica_timer_) replica_timer_->cancel();
  if (sentinel_) sentinel_->close();
  subscriber_->close();
  if (router_) router_->close();
  if (connection_) connection_->close();
}

void Executor::execute(std::vector<std::string> args, ReplyHandler handler, Retry retry,
                       const std::string& key) {
  auto a = std::make_shared<Attempt>();
  if (router_) {
    std::string_view routing = key;
    if (!routing.empty() || routing_key(args, routing)) a->slot = key_slot(routing);
  }
  a->args = std::move(args);
  a->handler = plain(std::move(handler));
  a->retry = retry;
  a->retries_left = retry == Retry::never ? 0 : config_.retry_attempts;
  run(std::move(a));
}

void Executor::eval(const lua::Script& script, std::vector<std::string> keys,
                    std::vector<std::string> args, ReplyHandler handler, Retry retry) {
  auto a = std::make_shared<Attempt>();
  a->args.reserve(3 + keys.size() + args.size());
  a->args.push_back("EVALSHA");
  a->args.push_back(sha1_of(script));
  a->args.push_back(std::to_string(keys.size()));
  // The first key routes the script (every key of one primitive shares its slot, docs/wire-format.md §1.1).
  if (router_ && !keys.empty()) a->slot = key_slot(keys[0]);
  for (auto& k : keys) a->args.push_back(std::move(k));
  for (auto& v : args) a->args.push_back(std::move(v));
  a->eval_source = script.source;
  a->handler = plain(std::move(handler));
  a->retry = retry;
  a->retries_left = retry == Retry::never ? 0 : config_.retry_attempts;
  run(std::move(a));
}

bool Executor::retry_after_error(const std::shared_ptr<Attempt>& a, std::exception_ptr error) {
  bool retryable = false;
  bool maybe_sent = false;  // the failed copy may have reached the server (may still arrive)
  try {
    std::rethrow_exception(error);
  } catch (const AuthError&) {
  } catch (const ConnectionError& e) {
    maybe_sent = e.maybe_sent();
    const bool resendable = a->retry == Retry::always || a->retry == Retry::recorded;
    const bool if_unsent = a->retry == Retry::if_unsent || a->retry == Retry::by_caller;
    retryable = resendable || (if_unsent && !e.maybe_sent());
    // A node that cannot be reached may have been failed over: learn the new map.
    if (router_) router_->request_refresh();
  } catch (const TimeoutError&) {
    // Its connection was given up (Connection::execute_resent_on_timeout): resend on a new one.
    retryable = a->retry == Retry::recorded;
    maybe_sent = true;
  } catch (...) {
  }
  if (!retryable || a->retries_left <= 0 || closed_) return false;
  --a->retries_left;
  if (maybe_sent && a->resent) *a->resent = true;
  a->ask.reset();
  auto timer = std::make_shared<asio::steady_timer>(io_, config_.retry_interval);
  timer->async_wait([this, a, timer](std::error_code ec) {
    if (ec || closed_) {
      return a->handler(std::make_exception_ptr(ClientClosedError("client closed")), {}, {});
    }
    run(a);
  });
  return true;
}

void Executor::send_on(Connection& connection, const std::shared_ptr<Attempt>& a,
                       ReplyHandler handler) {
  if (a->retry == Retry::recorded || a->retry == Retry::by_caller) {
    connection.execute_resent_on_timeout(a->args, std::move(handler));
  } else {
    connection.execute(a->args, std::move(handler));
  }
}

void Executor::run(std::shared_ptr<Attempt> a) {
  if (router_) return run_cluster(std::move(a));
  send_on(*connection_, a, [this, a](std::exception_ptr error, Reply reply) {
    if (error) {
      if (retry_after_error(a, error)) return;
      return a->handler(error, {}, {});
    }
    // The server lost its script cache (restart, SCRIPT FLUSH): send the source once.
    if (reply.is_error() && !a->eval_source.empty() && !a->reloaded &&
        reply.str.rfind("NOSCRIPT", 0) == 0) {
      a->reloaded = true;
      a->args[0] = "EVAL";
      a->args[1] = std::string(a->eval_source);
      return run(a);
    }
    a->handler(nullptr, std::move(reply), Target{connection_, replicas_});
  });
}

void Executor::run_cluster(std::shared_ptr<Attempt> a) {
  auto node = a->ask ? a->ask : router_->node_for_slot(a->slot < 0 ? 0 : a->slot);
  if (!node) {
    return a->handler(std::make_exception_ptr(ConnectionError(
                          "redis " + config_.describe() + ": the cluster slot map is not loaded")),
                      {}, {});
  }
  Connection& connection = router_->commands(*node);
  // ASKING and the request go out back to back on one connection (pipelined).
  if (a->ask) connection.execute({"ASKING"}, nullptr);
  send_on(connection, a, [this, a, node](std::exception_ptr error, Reply reply) {
    if (error) {
      if (retry_after_error(a, error)) return;
      return a->handler(error, {}, {});
    }
    if (reply.is_error() && handle_cluster_reply(a, reply, node->host)) return;
    // This node lost its script cache (restart, failover, SCRIPT FLUSH): send the source.
    if (reply.is_error() && !a->eval_source.empty() && !a->reloaded &&
        reply.str.rfind("NOSCRIPT", 0) == 0) {
      a->reloaded = true;
      a->args[0] = "EVAL";
      a->args[1] = std::string(a->eval_source);
      return run(a);  // to the same node (an ASK target stays the target)
    }
    a->handler(nullptr, std::move(reply), Target{node->commands, node->replicas});
  });
}

bool Executor::handle_cluster_reply(const std::shared_ptr<Attempt>& a, const Reply& reply,
                                    const std::string& node_host) {
  bool ask = false;
  int slot = 0;
  std::string host;
  std::uint16_t port = 0;
  if (parse_redirect(reply.str, ask, slot, host, port)) {
    if (host.empty()) host = node_host;  // "MOVED 3999 :6381": same host as the sender
    if (++a->redirects > kMaxRedirects) {
      a->handler(std::make_exception_ptr(ServerError(
                     "redis " + config_.describe() + ": gave up after " +
                         std::to_string(kMaxRedirects) + " cluster redirects for slot " +
                         std::to_string(slot) + "; last: " + reply.str,
                     reply.str)),
                 {}, {});
      return true;
    }
    if (ask) {
      // The slot is being migrated and the key is on the target: this request only.
      ++stats_.ask;
      a->ask = router_->node_at(host, port);
    } else {
      ++stats_.moved;
      a->ask.reset();
      router_->set_slot_owner(slot, host, port);
      router_->request_refresh();
    }
    run(a);
    return true;
  }
  const bool try_again = reply.str.rfind("TRYAGAIN", 0) == 0;
  const bool down = reply.str.rfind("CLUSTERDOWN", 0) == 0;
  if (!try_again && !down) return false;
  // TRYAGAIN: a multi-key step during a slot migration (keys split between the nodes);
  // CLUSTERDOWN: a failover in progress. Neither ran the request: wait a little and resend,
  // within the time the caller would have waited for a reply plus its retries.
  const auto budget = config_.timeout * std::max(1, config_.retry_attempts + 1);
  if (Clock::now() - a->started > budget) return false;
  ++stats_.try_again;
  if (down) router_->request_refresh();
  a->ask.reset();
  auto timer = std::make_shared<asio::steady_timer>(io_, a->try_again_delay);
  a->try_again_delay = std::min<Duration>(a->try_again_delay * 2, Duration{200});
  timer->async_wait([this, a, timer](std::error_code ec) {
    if (ec || closed_) {
      return a->handler(std::make_exception_ptr(ClientClosedError("client closed")), {}, {});
    }
    run(a);
  });
  return true;
}

}  // namespace redisync::net
