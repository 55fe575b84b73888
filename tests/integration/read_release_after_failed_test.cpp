// SPDX-License-Identifier: Apache-2.0
// A read release that frees the whole lock ends the caller's hold, whatever its local count
// says (found by the lease property test, lease_property_test.cpp, seed 506 of read_grant).
// A reader holding twice releases once; that release runs on the server but its answer never
// comes (the Client reports `failed` and keeps both holds locally, for a retry). The retry
// releases the last hold on the server: the lock is deleted (the reply says "released", and a
// waiting writer may get it at once). The Client used to count its own holds instead and
// answer `still_held`, keeping a read hold with a local deadline seconds ahead on a lock that
// no longer existed, beside the writer.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "redisync/redisync.h"
#include "support/fault_proxy.h"
#include "support/lease_bound.h"
#include "support/redis_server.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::AfterDrop;
using redisync::test::FaultProxy;
using redisync::test::RedisServer;
using redisync::test::RequestMatch;
using redisync::test::lease_bound_violation;
using redisync::test::unique_name;

namespace {

void retry_after_failed_read_release(redisync::Handoff mode) {
  RedisServer server;
  FaultProxy proxy(server.port());
  auto cfg = redisync::Config::from_url(proxy.url());
  cfg.handoff = mode;
  cfg.timeout = 300ms;
  cfg.connect_timeout = 300ms;
  cfg.retry_attempts = 1;
  cfg.retry_interval = 20ms;
  cfg.log = [](std::string_view) {};
  redisync::Client client(cfg);
  client.on_lock_lost([](const redisync::LockLostEvent&) {});
  const auto name = unique_name("read-release-retry:");
  auto read = client.read_write_lock(name).read_lock();
  read.lock();
  read.lock();

  // The first release runs; its reply stalls and its resend finds no connection.
  proxy.drop_reply(RequestMatch{"EVALSHA", "", name}, 1, AfterDrop::stall);
  proxy.set_refuse(true);
  const auto first = read.release();
  ASSERT_EQ(first.outcome, redisync::ReleaseOutcome::failed) << "the premise: " << first.error;
  proxy.clear();
  proxy.reset_connections();
  ASSERT_EQ(server.command({"HGET", name, client.id() + ":" +
                                             std::to_string(redisync::Client::current_thread_id())})
                .as_string(),
            "1")
      << "the first release ran on the server";

  // The retry releases the last hold there: the lock is gone, and so is the caller's hold.
  const auto again = read.release();
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
  EXPECT_EQ(again.outcome, redisync::ReleaseOutcome::released);
  EXPECT_EQ(lease_bound_violation(client, server, name), "");
  EXPECT_FALSE(client.lease_deadline().has_value());
}

TEST(ReadReleaseAfterFailed, WakeModeRetryThatFreesTheLockEndsTheHold) {
  retry_after_failed_read_release(redisync::Handoff::wake);
}

TEST(ReadReleaseAfterFailed, GrantModeRetryThatFreesTheLockEndsTheHold) {
  retry_after_failed_read_release(redisync::Handoff::grant);
}

}  // namespace
