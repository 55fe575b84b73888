// Client configurations the integration tests share.
#pragma once

#include <chrono>
#include <string>

#include "redisync/config.h"
#include "support/redis_server.h"

namespace redisync::test {

/// For a test server: short subscription linger and reconnection delays (a restarted server is
/// found quickly), Redisson's defaults otherwise.
inline Config config_for(const RedisServer& server) {
  auto cfg = Config::from_url(server.url());
  cfg.subscription_linger = std::chrono::milliseconds(100);
  cfg.reconnection_delay_min = std::chrono::milliseconds(20);
  cfg.reconnection_delay_max = std::chrono::milliseconds(200);
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

}  // namespace redisync::test
