// SPDX-License-Identifier: Apache-2.0
// The Metrics hook (redisync/metrics.h) for the primitives besides the lock kinds, against
// real redis-servers: semaphore, permit-expirable semaphore, count-down latch, rate limiter,
// spin lock, MultiLock and RedLock each report under their own kind. Waits that must be
// woken start only once the waiter is asleep (its attempts seen by the server, its channel
// subscribed), so the wake-up is the release's.
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <vector>

#include "redisync/redisync.h"
#include "support/metrics_hook_test.h"
#include "support/recording_metrics.h"
#include "support/redis_server.h"
#include "support/server_stats.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::Counter;
using redisync::Histogram;
using redisync::test::command_calls;
using redisync::test::no_channels;
using redisync::test::RecordingMetrics;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

long long script_calls(RedisServer& server) {
  return command_calls(server, "evalsha") + command_calls(server, "eval");
}

// The waiter has tried twice (before and after its subscription) and subscribed: asleep.
bool asleep_after(RedisServer& server, const std::string& command, long long baseline) {
  return wait_until(
      [&] {
        const long long calls =
            command == "script" ? script_calls(server) : command_calls(server, command);
        return calls >= baseline + 2 && !no_channels(server);
      },
      10s);
}

}  // namespace

class MetricsKindsTest : public redisync::test::MetricsHookTest {};

TEST_F(MetricsKindsTest, SemaphoreReportsAcquireWaitAttemptsTimeoutAndNoHoldTime) {
  redisync::Client client(config());
  const auto name = unique_name("metrics:sem");
  auto sem = client.semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(1));
  sem.acquire();
  EXPECT_FALSE(sem.try_acquire()) << "no permit left";
  sem.release();

  EXPECT_EQ(metrics->count("semaphore", name, Counter::acquires), 1u);
  EXPECT_EQ(metrics->count("semaphore", name, Counter::timeouts), 1u);
  EXPECT_EQ(metrics->values("semaphore", name, Histogram::acquire_wait).size(), 1u);
  EXPECT_EQ(metrics->values("semaphore", name, Histogram::attempts_per_acquire),
            (std::vector<double>{1}));
  EXPECT_TRUE(metrics->values("semaphore", name, Histogram::hold_time).empty())
      << "a semaphore's permits have no owner: nothing ends a hold";
}

TEST_F(MetricsKindsTest, SemaphoreWaiterWokenByAReleaseReportsWakeUpAndHandoff) {
  redisync::Client holder(config());
  redisync::Client waiter_client(config());
  const auto name = unique_name("metrics:semwake");
  auto sem = holder.semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(1));
  sem.acquire();
  const long long baseline = script_calls(server);
  auto waiter = std::async(std::launch::async,
                           [&] { return waiter_client.semaphore(name).try_acquire_for(20s); });
  ASSERT_TRUE(asleep_after(server, "script", baseline));
  sem.release();
  ASSERT_TRUE(waiter.get());

  expect_woken_handoff("semaphore", name, 3.0, "tried, subscribed, tried, slept, woken, tried");
}

TEST_F(MetricsKindsTest, PermitExpirableSemaphoreReportsHoldTimeAndALostPermit) {
  redisync::Client client(config());
  const auto name = unique_name("metrics:pes");
  const std::string kind = "permit_expirable_semaphore";
  auto sem = client.permit_expirable_semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(1));
  const auto id = sem.acquire(10s);
  EXPECT_FALSE(sem.try_acquire_for(0ms, 10s)) << "no permit left";
  sem.release(id);
  EXPECT_EQ(metrics->values(kind, name, Histogram::hold_time).size(), 1u);

  // A permit whose lease runs out before its release: lost.
  const auto short_lived = sem.acquire(50ms);
  ASSERT_TRUE(wait_until([&] { return sem.available_permits() == 1; }, 10s))
      << "the lease of 50 ms ends and the permit is reclaimed";
  EXPECT_FALSE(sem.try_release(short_lived));

  EXPECT_EQ(metrics->count(kind, name, Counter::acquires), 2u);
  EXPECT_EQ(metrics->count(kind, name, Counter::timeouts), 1u);
  EXPECT_EQ(metrics->values(kind, name, Histogram::attempts_per_acquire),
            (std::vector<double>{1, 1}));
  EXPECT_EQ(metrics->count(kind, name, Counter::lost_locks), 1u);
  EXPECT_EQ(metrics->values(kind, name, Histogram::hold_time).size(), 1u)
      << "a lost permit has no hold time";
}

TEST_F(MetricsKindsTest, PermitExpirableSemaphoreReleaseOfSeveralReportsEachHold) {
  redisync::Client client(config());
  const auto name = unique_name("metrics:pesmany");
  auto sem = client.permit_expirable_semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(2));
  const auto ids = sem.acquire(2, 10s);
  sem.release(ids);
  // Reported on the I/O thread after the release returned.
  EXPECT_TRUE(wait_until(
      [&] {
        return metrics->values("permit_expirable_semaphore", name, Histogram::hold_time).size() ==
               2u;
      },
      10s));
}

TEST_F(MetricsKindsTest, LatchWaitReportsAcquireWakeUpAndTimeout) {
  redisync::Client client(config());
  redisync::Client waiter_client(config());
  const auto name = unique_name("metrics:latch");
  const std::string kind = "count_down_latch";
  auto latch = client.count_down_latch(name);
  ASSERT_TRUE(latch.try_set_count(1));
  EXPECT_FALSE(latch.wait_for(50ms));
  const long long baseline = command_calls(server, "get");
  auto waiter = std::async(std::launch::async,
                           [&] { return waiter_client.count_down_latch(name).wait_for(20s); });
  ASSERT_TRUE(asleep_after(server, "get", baseline));
  latch.count_down();
  ASSERT_TRUE(waiter.get());
  EXPECT_TRUE(latch.wait_for(0ms)) << "open: no wait";

  EXPECT_EQ(metrics->count(kind, name, Counter::timeouts), 1u);
  EXPECT_EQ(metrics->count(kind, name, Counter::acquires), 2u);
  EXPECT_GE(metrics->count(kind, name, Counter::wake_ups), 1u);
  EXPECT_EQ(metrics->values(kind, name, Histogram::handoff_latency).size(), 1u);
  EXPECT_EQ(metrics->values(kind, name, Histogram::acquire_wait).size(), 2u);
  EXPECT_TRUE(metrics->values(kind, name, Histogram::hold_time).empty());
}

TEST_F(MetricsKindsTest, RateLimiterReportsAcquiresTimeoutsAndAWakeUpByRelease) {
  redisync::Client client(config());
  const auto name = unique_name("metrics:rate");
  const std::string kind = "rate_limiter";
  auto limiter = client.rate_limiter(name);
  limiter.set_rate(redisync::RateType::overall, 1, 15s);
  ASSERT_TRUE(limiter.try_acquire());
  EXPECT_FALSE(limiter.try_acquire()) << "the window's one permit is taken";

  // A waiter sleeping until the window frees a permit (15 s, within its wait: a waiter whose
  // wait ends first gives up at once); a release on the same Client wakes it before that.
  const long long baseline = script_calls(server);
  auto waiter = std::async(std::launch::async,
                           [&] { return client.rate_limiter(name).try_acquire_for(1, 20s); });
  ASSERT_TRUE(wait_until([&] { return script_calls(server) >= baseline + 1; }, 10s));
  limiter.release();
  ASSERT_TRUE(waiter.get());

  EXPECT_EQ(metrics->count(kind, name, Counter::acquires), 2u);
  EXPECT_EQ(metrics->count(kind, name, Counter::timeouts), 1u);
  EXPECT_EQ(metrics->count(kind, name, Counter::wake_ups), 1u);
  EXPECT_EQ(metrics->values(kind, name, Histogram::handoff_latency).size(), 1u);
  EXPECT_EQ(metrics->values(kind, name, Histogram::attempts_per_acquire),
            (std::vector<double>{1, 2}));
}

TEST_F(MetricsKindsTest, SpinLockCountsItsAttempts) {
  redisync::Client client(config());
  redisync::Client other(config());
  const auto name = unique_name("metrics:spin");
  auto held = other.spin_lock(name);
  held.lock();
  const long long baseline = script_calls(server);
  auto spinner = std::async(std::launch::async, [&] {
    auto lock = client.spin_lock(name);
    const bool got = lock.try_lock_for(20s, 30s);
    if (got) lock.unlock();
    return got;
  });
  ASSERT_TRUE(wait_until([&] { return script_calls(server) >= baseline + 2; }, 10s));
  held.unlock();
  ASSERT_TRUE(spinner.get());

  EXPECT_EQ(metrics->count("spin_lock", name, Counter::acquires), 2u);
  const auto attempts = metrics->values("spin_lock", name, Histogram::attempts_per_acquire);
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0], 1.0);
  EXPECT_GE(attempts[1], 3.0) << "two refused attempts seen, then the one that took it";
  EXPECT_EQ(metrics->values("spin_lock", name, Histogram::hold_time).size(), 2u);
}

TEST_F(MetricsKindsTest, MultiLockReportsAsAWholeBesidesItsMembers) {
  redisync::Client client(config());
  redisync::Client other(config());
  const auto a = unique_name("metrics:ma");
  const auto b = unique_name("metrics:mb");
  redisync::MultiLock multi{client.lock(a), client.lock(b)};
  const std::string name = multi.name();
  multi.lock();
  multi.lock();  // reentrant: one hold time, at the outer release
  multi.unlock();
  EXPECT_TRUE(metrics->values("multi_lock", name, Histogram::hold_time).empty());
  multi.unlock();

  auto blocker = other.lock(b);
  blocker.lock();
  EXPECT_FALSE(multi.try_lock()) << "member b is held by another Client";
  blocker.unlock();

  // Lost: a member's key removed while held with a fixed lease.
  ASSERT_TRUE(multi.try_lock_for(0ms, 30s));
  server.command({"DEL", a});
  EXPECT_EQ(multi.release().outcome, redisync::ReleaseOutcome::lost);

  EXPECT_EQ(metrics->count("multi_lock", name, Counter::acquires), 3u);
  EXPECT_EQ(metrics->count("multi_lock", name, Counter::timeouts), 1u);
  EXPECT_EQ(metrics->values("multi_lock", name, Histogram::attempts_per_acquire),
            (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(metrics->values("multi_lock", name, Histogram::hold_time).size(), 1u);
  EXPECT_EQ(metrics->count("multi_lock", name, Counter::lost_locks), 1u);
  EXPECT_GE(metrics->count("lock", a, Counter::acquires), 3u) << "members report as locks";
}

TEST_F(MetricsKindsTest, RedLockReportsUnderItsOwnKind) {
  std::vector<std::unique_ptr<RedisServer>> servers;
  std::vector<std::unique_ptr<redisync::Client>> clients;
  const auto name = unique_name("metrics:red");
  std::vector<redisync::AnyLock> members;
  for (int i = 0; i < 3; ++i) {
    servers.push_back(std::make_unique<RedisServer>());
    clients.push_back(
        std::make_unique<redisync::Client>(redisync::test::config_for(*servers.back(), metrics)));
    members.emplace_back(clients.back()->lock(name));
  }
  redisync::RedLock red(members);
  const std::string label = red.name();
  ASSERT_TRUE(red.try_lock_for(2s, 10s));
  red.unlock();

  EXPECT_EQ(metrics->count("red_lock", label, Counter::acquires), 1u);
  EXPECT_EQ(metrics->values("red_lock", label, Histogram::acquire_wait).size(), 1u);
  EXPECT_EQ(metrics->values("red_lock", label, Histogram::attempts_per_acquire),
            (std::vector<double>{1}));
  EXPECT_EQ(metrics->values("red_lock", label, Histogram::hold_time).size(), 1u);
  EXPECT_EQ(metrics->count("multi_lock", Counter::acquires), 0u);
}
