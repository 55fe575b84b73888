// SPDX-License-Identifier: Apache-2.0
// A server that wants a password the client did not give answers NOAUTH to every command: every
// primitive reports that as AuthError (a configuration problem), never as a ServerError about
// the object. One mapping of error replies (net::server_error) serves them all.
#include <gtest/gtest.h>

#include <asio/use_future.hpp>
#include <functional>
#include <string>
#include <vector>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::fast_config;
using redisync::test::RedisServer;
using redisync::test::unique_name;

namespace {

struct Case {
  std::string what;
  std::function<void(redisync::Client&)> call;
};

TEST(AuthError, NoAuthIsAnAuthErrorForEveryPrimitive) {
  RedisServer server({.password = "s3cret"});
  redisync::Client client(fast_config("redis://127.0.0.1:" + std::to_string(server.port())));
  const std::string n = unique_name("auth:");
  const std::vector<Case> cases{
      {"lock", [&](redisync::Client& c) { c.lock(n).try_lock(); }},
      {"fair lock", [&](redisync::Client& c) { c.fair_lock(n).try_lock(); }},
      {"fenced lock", [&](redisync::Client& c) { c.fenced_lock(n).try_lock(); }},
      {"spin lock", [&](redisync::Client& c) { c.spin_lock(n).try_lock(); }},
      {"read lock", [&](redisync::Client& c) { c.read_write_lock(n).read_lock().try_lock(); }},
      {"semaphore acquire", [&](redisync::Client& c) { c.semaphore(n).try_acquire(1); }},
      {"semaphore count", [&](redisync::Client& c) { c.semaphore(n).available_permits(); }},
      {"permit-expirable semaphore",
       [&](redisync::Client& c) { c.permit_expirable_semaphore(n).try_acquire(); }},
      {"latch count down", [&](redisync::Client& c) { c.count_down_latch(n).count_down(); }},
      {"latch count", [&](redisync::Client& c) { c.count_down_latch(n).count(); }},
      {"rate limiter acquire", [&](redisync::Client& c) { c.rate_limiter(n).try_acquire(); }},
      {"rate limiter wait",
       [&](redisync::Client& c) { c.rate_limiter(n).async_acquire(1, asio::use_future).get(); }},
      {"rate limiter release", [&](redisync::Client& c) { c.rate_limiter(n).release(); }},
      {"rate limiter set",
       [&](redisync::Client& c) {
         c.rate_limiter(n).try_set_rate(redisync::RateType::overall, 1, 1s);
       }},
      {"execute", [&](redisync::Client& c) { c.execute({"PING"}); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    try {
      c.call(client);
      ADD_FAILURE() << c.what << ": expected AuthError, the call succeeded";
    } catch (const redisync::AuthError& e) {
      // NOAUTH, or (for requests too long for an unauthenticated connection) Redis's
      // "Protocol error: unauthenticated ..."; either way the message says what to set.
      EXPECT_NE(std::string(e.what()).find("password"), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.what << ": expected AuthError, got " << e.what();
    }
  }
}

}  // namespace
