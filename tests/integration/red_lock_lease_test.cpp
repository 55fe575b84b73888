// SPDX-License-Identifier: Apache-2.0
// RedLock leases that leave no validity (below MultiLock::kMinValidityLease, or a tiny
// Config::lock_watchdog_timeout) are refused by every entry point, async ones included: an
// attempt could never succeed, and the lock would retry forever (issue: ~13,000 scripts/s per
// server for async_lock(..., 2ms, ...)).
#include <gtest/gtest.h>

#include <asio/use_future.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <vector>

#include "integration/lock_kinds_util.h"
#include "redisync/redisync.h"
#include "support/expect_error.h"
#include "support/redis_server.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::expect_error;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::kinds::config_for;

namespace {

struct Three {
  explicit Three(std::chrono::milliseconds watchdog = 30s) {
    for (int i = 0; i < 3; ++i) {
      servers.push_back(std::make_unique<RedisServer>());
      auto cfg = config_for(*servers.back());
      cfg.lock_watchdog_timeout = watchdog;
      clients.push_back(std::make_unique<redisync::Client>(cfg));
    }
  }
  redisync::RedLock red_lock(const std::string& name) {
    std::vector<redisync::AnyLock> members;
    for (auto& c : clients) members.emplace_back(c->lock(name));
    return redisync::RedLock(members);
  }
  bool untouched(const std::string& name) {
    for (auto& s : servers) {
      if (s->command({"EXISTS", name}).as_integer() != 0) return false;
    }
    return true;
  }
  std::vector<std::unique_ptr<RedisServer>> servers;
  std::vector<std::unique_ptr<redisync::Client>> clients;
};

// Waits (bounded) for an async completion and expects the lease error naming both figures.
template <class Future>
void expect_refused(Future& f, const std::string& lease, const char* form) {
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready)
      << form << " with a lease that leaves no validity retries forever";
  expect_error<redisync::InvalidArgument>([&] { f.get(); }, {lease, "10 ms"});
}

}  // namespace

TEST(RedLockLeaseTest, AsyncFormsWithALeaseBelowTheMinimumRetryForever) {
  Three s;
  const std::string name = unique_name("rl-lease:");
  auto lock = s.red_lock(name);
  const auto owner = redisync::Client::new_owner_id();
  auto locked = lock.async_lock(owner, 2ms, asio::use_future);
  expect_refused(locked, "2 ms", "async_lock");
  auto tried = lock.async_try_lock(owner, 1s, 2ms, asio::use_future);
  expect_refused(tried, "2 ms", "async_try_lock");
  EXPECT_TRUE(s.untouched(name));
}

TEST(RedLockLeaseTest, WatchdogLeaseBelowTheMinimumRetriesForever) {
  Three s(5ms);
  const std::string name = unique_name("rl-lease:");
  auto lock = s.red_lock(name);
  const auto owner = redisync::Client::new_owner_id();
  auto locked = lock.async_lock(owner, asio::use_future);
  expect_refused(locked, "lock_watchdog_timeout", "async_lock (watchdog lease)");
  auto tried = lock.async_try_lock(owner, 1s, 0ms, asio::use_future);
  expect_refused(tried, "lock_watchdog_timeout", "async_try_lock (watchdog lease)");
  expect_error<redisync::InvalidArgument>([&] { lock.try_lock(); },
                                          {"lock_watchdog_timeout", "10 ms"});
  EXPECT_TRUE(s.untouched(name));
}
