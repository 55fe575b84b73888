// SPDX-License-Identifier: Apache-2.0
// The Executor, its set-up and entry points: the connections of each topology, the replica
// count, script SHAs, and the requests it takes (execute, eval, eval_acked), made into
// Attempts. How an Attempt is sent, resent and redirected is in request_delivery.cpp.
#include "net/executor.h"

#include <openssl/evp.h>

#include <asio/steady_timer.hpp>
#include <map>
#include <mutex>

#include "net/attempt.h"
#include "net/cluster_slot.h"
#include "net/server_text.h"
#include "redisync/errors.h"

namespace redisync::net {

namespace {

RoutedHandler plain(ReplyHandler handler) {
  return [handler = std::move(handler)](std::exception_ptr e, Reply r, const Target&) {
    handler(e, std::move(r));
  };
}

}  // namespace

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
    subscriber_->set_heartbeat(pubsub_heartbeat(config_));
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
  subscriber_->set_heartbeat(pubsub_heartbeat(config_));
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
                          std::shared_ptr<bool> resent, int resends_unacked) {
  auto a = eval_attempt(script, std::move(keys), std::move(args), retry);
  a->resent = std::move(resent);
  run_acked(std::move(a), std::move(done), resends_unacked);
}

void Executor::run_acked(std::shared_ptr<Attempt> a,
                         std::function<void(std::exception_ptr, Reply, int)> done,
                         int resends_unacked) {
  // The handler runs only through its attempt (which holds it), so the attempt is alive then.
  const Attempt* self = a.get();
  a->handler = [this, self, done = std::move(done), resends_unacked](
                   std::exception_ptr error, Reply reply, const Target& target) mutable {
    // The count is read now: an INFO sent ahead of the script has been answered by now.
    const int replicas = config_.check_lock_synced_slaves ? target.replicas : 0;
    if (error || replicas == 0 || reply.is_error() || !target.connection) {
      return done(error, std::move(reply), -1);
    }
    // A resend is a copy of the request, made only here: a step without replicas to wait for
    // (nearly every one) copies nothing.
    std::shared_ptr<Attempt> again;
    if (resends_unacked > 0) {
      again = new_attempt(self->retry);
      again->args = self->args;
      again->eval_source = self->eval_source;
      again->slot = self->slot;
      again->resent = self->resent;
    }
    // WAIT goes to the server that ran the step (in a cluster: that slot's master).
    auto step = std::make_shared<Reply>(std::move(reply));
    target.connection->execute(
        {"WAIT", std::to_string(replicas), std::to_string(config_.slaves_sync_timeout.count())},
        [this, step, done = std::move(done), again, resends_unacked](std::exception_ptr wait_error,
                                                                     Reply acked) mutable {
          // A failed WAIT counts as "not acknowledged".
          const int n = wait_error || !acked.is_integer() ? 0 : static_cast<int>(acked.integer);
          if (n == 0 && again)
            return run_acked(std::move(again), std::move(done), resends_unacked - 1);
          done(nullptr, std::move(*step), n);
        });
  };
  run(std::move(a));
}

int Executor::replicas() const { return router_ ? router_->max_replicas() : replicas_; }

std::size_t Executor::in_flight() const {
  if (router_) return router_->in_flight();
  return connection_ ? connection_->in_flight() : 0;
}

Duration Executor::reply_lag(Clock::time_point now) const {
  if (router_) return router_->reply_lag(now);
  return connection_ ? connection_->reply_lag(now) : Duration{0};
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
  auto a = new_attempt(retry);
  if (router_) {
    std::string_view routing = key;
    if (!routing.empty() || routing_key(args, routing)) a->slot = key_slot(routing);
  }
  a->args = std::move(args);
  a->handler = plain(std::move(handler));
  run(std::move(a));
}

void Executor::eval(const lua::Script& script, std::vector<std::string> keys,
                    std::vector<std::string> args, ReplyHandler handler, Retry retry) {
  auto a = eval_attempt(script, std::move(keys), std::move(args), retry);
  a->handler = plain(std::move(handler));
  run(std::move(a));
}

std::shared_ptr<Attempt> Executor::new_attempt(Retry retry) const {
  auto a = std::make_shared<Attempt>();
  a->retry = retry;
  a->retries_left = retry == Retry::never ? 0 : config_.retry_attempts;
  return a;
}

std::shared_ptr<Attempt> Executor::eval_attempt(const lua::Script& script,
                                                std::vector<std::string> keys,
                                                std::vector<std::string> args,
                                                Retry retry) const {
  auto a = new_attempt(retry);
  a->args.reserve(3 + keys.size() + args.size());
  a->args.push_back("EVALSHA");
  a->args.push_back(sha1_of(script));
  a->args.push_back(std::to_string(keys.size()));
  // The first key routes the script (every key of one primitive shares its slot,
  // docs/wire-format.md §1.1).
  if (router_ && !keys.empty()) a->slot = key_slot(keys[0]);
  for (auto& k : keys) a->args.push_back(std::move(k));
  for (auto& v : args) a->args.push_back(std::move(v));
  a->eval_source = script.source;
  return a;
}

}  // namespace redisync::net
