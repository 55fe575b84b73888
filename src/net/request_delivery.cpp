// SPDX-License-Identifier: Apache-2.0
// The Executor, how it delivers an Attempt: on the connection of the topology (in a cluster,
// the slot's master, following MOVED and ASK, waiting out TRYAGAIN and CLUSTERDOWN), resent
// after connection errors as its Retry allows, and scripts loaded once per connection
// (net/script_loads.h), sent again after NOSCRIPT.
#include <algorithm>
#include <asio/steady_timer.hpp>

#include "net/attempt.h"
#include "net/cluster_map.h"
#include "net/executor.h"
#include "redisync/errors.h"

namespace redisync::net {

namespace {

constexpr int kMaxRedirects = 5;  // MOVED/ASK per request before giving up

bool is_noscript(const Attempt& a, const Reply& reply) {
  return reply.is_error() && !a.eval_source.empty() && a.args[0] == "EVALSHA" &&
         reply.str.rfind("NOSCRIPT", 0) == 0;
}

// Sends the script's source instead of its SHA.
void to_eval(Attempt& a) {
  a.args[0] = "EVAL";
  a.args[1] = std::string(a.eval_source);
}

// The server lost its script cache (restart, failover, SCRIPT FLUSH) before an EVALSHA sent
// on `connection` ran, so it did not run: it is sent again, behind one SCRIPT LOAD on that
// connection (prepare_script), and as an EVAL of the source if that finds no script either. True
// when the caller is to run it again.
bool retry_after_noscript(Connection& connection, Attempt& a, const Reply& reply) {
  if (!is_noscript(a, reply)) return false;
  connection.scripts().missing(a.args[1], a.script_load);
  if (a.reloaded) {
    to_eval(a);
  } else {
    a.reloaded = true;
  }
  return true;
}

}  // namespace

void Executor::prepare_script(Connection& connection, Attempt& a) {
  if (a.eval_source.empty() || a.args[0] != "EVALSHA") return;
  auto& loads = connection.scripts();
  const auto plan = loads.plan(a.args[1]);
  a.script_load = plan.load;
  if (plan.send == ScriptLoads::Send::eval) return to_eval(a);
  if (plan.send != ScriptLoads::Send::load_then_evalsha) return;
  // Ahead of the call on the same connection: the server runs them in order.
  std::weak_ptr<Connection> weak = connection.shared_from_this();
  connection.execute(
      {"SCRIPT", "LOAD", std::string(a.eval_source)},
      [weak, sha = a.args[1], load = plan.load](std::exception_ptr error, Reply reply) {
        auto c = weak.lock();
        if (!c || error || !reply.is_error()) return;
        c->scripts().refused(sha, load, reply.str.rfind("NOPERM", 0) == 0);
      });
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
  run_after(a, config_.retry_interval);
  return true;
}

void Executor::run_after(const std::shared_ptr<Attempt>& a, Duration delay) {
  auto timer = std::make_shared<asio::steady_timer>(io_, delay);
  timer->async_wait([this, a, timer](std::error_code ec) {
    if (ec || closed_) {
      return a->handler(std::make_exception_ptr(ClientClosedError("client closed")), {}, {});
    }
    run(a);
  });
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
  prepare_script(*connection_, *a);
  send_on(*connection_, a, [this, a](std::exception_ptr error, Reply reply) {
    if (error) {
      if (retry_after_error(a, error)) return;
      return a->handler(error, {}, {});
    }
    if (retry_after_noscript(*connection_, *a, reply)) return run(a);
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
  prepare_script(connection, *a);  // a SCRIPT LOAD goes before ASKING, not between
  // ASKING and the request go out back to back on one connection (pipelined).
  if (a->ask) connection.execute({"ASKING"}, nullptr);
  send_on(connection, a, [this, a, node](std::exception_ptr error, Reply reply) {
    if (error) {
      if (retry_after_error(a, error)) return;
      return a->handler(error, {}, {});
    }
    if (reply.is_error() && handle_cluster_reply(a, reply, node->host)) return;
    // To the same node (an ASK target stays the target).
    if (retry_after_noscript(*node->commands, *a, reply)) return run(a);
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
  run_after(a, a->try_again_delay);
  a->try_again_delay = std::min<Duration>(a->try_again_delay * 2, Duration{200});
  return true;
}

}  // namespace redisync::net
