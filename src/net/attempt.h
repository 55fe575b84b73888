// SPDX-License-Identifier: Apache-2.0
// One request the Executor runs, with its retry budget and routing state (Attempt), and where
// it ran (Target). Internal to the Executor's files (executor.cpp, request_delivery.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "net/cluster.h"
#include "net/connection.h"
#include "net/executor.h"

namespace redisync::net {

// Where a request ran: the connection (for a pipelined WAIT) and its master's replicas.
struct Target {
  std::shared_ptr<Connection> connection;
  int replicas = 0;
};
using RoutedHandler = std::function<void(std::exception_ptr, Reply, const Target&)>;

// One request with its retry budget; lives until the handler has been called.
struct Attempt {
  std::vector<std::string> args;
  RoutedHandler handler;
  Retry retry;
  int retries_left;
  std::string_view eval_source;   // set for EVALSHA: the script text (SCRIPT LOAD, EVAL)
  std::uint64_t script_load = 0;  // the SCRIPT LOAD its EVALSHA relies on (ScriptLoads::Plan)
  bool reloaded = false;          // sent again after a NOSCRIPT already
  // Cluster topology:
  int slot = -1;                      // the routing key's slot; -1: keyless (any master)
  std::shared_ptr<ClusterNode> ask;   // ASK target: send ASKING + the request there next
  int redirects = 0;
  Clock::time_point started = Clock::now();
  Duration try_again_delay{10};
  std::shared_ptr<bool> resent;  // eval_acked(): set when resent after a maybe-sent copy
};

}  // namespace redisync::net
