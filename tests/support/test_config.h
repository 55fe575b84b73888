// SPDX-License-Identifier: Apache-2.0
// Client configurations the integration tests share.
#pragma once

#include <chrono>
#include <cstdlib>
#include <string>

#include "redisync/config.h"
#include "support/redis_server.h"

namespace redisync::test {

/// For a test server: short subscription linger and reconnection delays (a restarted server is
/// found quickly), Redisson's defaults otherwise. REDISYNC_TEST_HANDOFF=grant runs the tests
/// that use it with Config::handoff = grant (e.g. the interop tests).
inline Config config_for(const RedisServer& server) {
  auto cfg = Config::from_url(server.url());
  if (const char* h = std::getenv("REDISYNC_TEST_HANDOFF"); h && std::string(h) == "grant") {
    cfg.handoff = Handoff::grant;
  }
  cfg.subscription_linger = std::chrono::milliseconds(100);
  cfg.reconnection_delay_min = std::chrono::milliseconds(20);
  cfg.reconnection_delay_max = std::chrono::milliseconds(200);
  return cfg;
}

/// config_for() with the watchdog lease `lease` (Config::lock_watchdog_timeout; renewals every
/// third of it), so a test sees several renewals or a lease running out within seconds.
inline Config watchdog_config(const RedisServer& server, std::chrono::milliseconds lease) {
  auto cfg = config_for(server);
  cfg.lock_watchdog_timeout = lease;
  return cfg;
}

/// For tests of failures: short timeouts, one retry, so an unreachable or misbehaving server
/// is reported within a second.
inline Config fast_config(const std::string& url) {
  auto cfg = Config::from_url(url);
  cfg.timeout = std::chrono::milliseconds(500);
  cfg.connect_timeout = std::chrono::milliseconds(1000);
  cfg.retry_attempts = 1;
  cfg.retry_interval = std::chrono::milliseconds(50);
  cfg.reconnection_delay_min = std::chrono::milliseconds(20);
  cfg.reconnection_delay_max = std::chrono::milliseconds(100);
  cfg.subscription_linger = std::chrono::milliseconds(50);
  return cfg;
}

/// For a server that is stopped (SIGSTOP) for about a second while a call is under way:
/// replies time out quickly (300 ms) and a call may be retried often enough to outlast the
/// pause.
inline Config sleepy_config(const RedisServer& server) {
  auto cfg = config_for(server);
  cfg.timeout = std::chrono::milliseconds(300);
  cfg.connect_timeout = std::chrono::milliseconds(300);
  cfg.retry_attempts = 12;
  cfg.retry_interval = std::chrono::milliseconds(100);
  return cfg;
}

}  // namespace redisync::test
