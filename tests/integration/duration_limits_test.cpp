// SPDX-License-Identifier: Apache-2.0
// Issue 17 item 1: durations Redis cannot store. A lease PEXPIRE refused after the lock hash
// was written left a lock without expiry (held by nobody, forever); a wait too long to add to
// the steady clock overflowed into "no wait at all". Every primitive refuses such a lease
// (InvalidArgument naming the limit) before anything is written, and a wait beyond
// redisync::max_duration means "no limit".
#include <gtest/gtest.h>

#include <asio/use_future.hpp>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::Duration;
using redisync::test::RedisServer;
using redisync::test::unique_name;

namespace {

const Duration kHuge = Duration::max();
const Duration kJustOver = redisync::max_duration + Duration{1};

bool exists(RedisServer& server, const std::string& key) {
  return server.command({"EXISTS", key}).as_integer() == 1;
}

// `f` must throw InvalidArgument naming the limit, and leave no key behind.
template <class F>
void refused_before_write(RedisServer& server, const std::string& key, F f) {
  try {
    f();
    ADD_FAILURE() << key << ": expected InvalidArgument";
  } catch (const redisync::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(redisync::max_duration.count())),
              std::string::npos)
        << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << key << ": expected InvalidArgument, got " << e.what();
  }
  EXPECT_FALSE(exists(server, key)) << key << " was written";
  EXPECT_EQ(server.command({"PTTL", key}).as_integer(), -2) << key;
}

}  // namespace

TEST(DurationLimits, LeaseRedisCannotStoreLeavesNoLockWithoutExpiry) {
  RedisServer server;
  redisync::Client client(redisync::Config::from_url(server.url()));
  const auto owner = redisync::Client::new_owner_id();
  for (const Duration lease : {kHuge, kJustOver}) {
    auto lock = client.lock(unique_name("lock:"));
    refused_before_write(server, lock.name(), [&] { lock.lock(lease); });
    refused_before_write(server, lock.name(), [&] { lock.try_lock_for(1s, lease); });
    refused_before_write(server, lock.name(),
                         [&] { lock.async_lock(owner, lease, asio::use_future).get(); });
    auto fair = client.fair_lock(unique_name("fair:"));
    refused_before_write(server, fair.name(), [&] { fair.lock(lease); });
    refused_before_write(server, fair.name(), [&] {
      fair.async_try_lock(owner, 1s, lease, asio::use_future).get();
    });
    auto fenced = client.fenced_lock(unique_name("fenced:"));
    refused_before_write(server, fenced.name(), [&] { fenced.lock_and_get_token(lease); });
    refused_before_write(server, fenced.name(), [&] {
      fenced.async_lock_and_get_token(owner, lease, asio::use_future).get();
    });
    auto spin = client.spin_lock(unique_name("spin:"));
    refused_before_write(server, spin.name(), [&] { spin.try_lock_for(0ms, lease); });
    auto rw = client.read_write_lock(unique_name("rw:"));
    refused_before_write(server, rw.name(), [&] { rw.lock(lease); });
    refused_before_write(server, rw.name(), [&] { rw.lock_shared(lease); });
    refused_before_write(server, rw.name(), [&] {
      rw.read_lock().async_lock(owner, lease, asio::use_future).get();
    });
    const auto multi_name = unique_name("multi:");
    redisync::MultiLock multi{client.lock(multi_name + "a"), client.fair_lock(multi_name + "b")};
    refused_before_write(server, multi_name + "a", [&] { multi.lock(lease); });
    refused_before_write(server, multi_name + "a", [&] {
      multi.async_lock(owner, lease, asio::use_future).get();
    });
    auto red = client.lock(unique_name("red:"));
    redisync::RedLock redlock{red};
    refused_before_write(server, red.name(), [&] { redlock.try_lock_for(0ms, lease); });
    auto sem = client.semaphore(unique_name("sem:"));
    refused_before_write(server, sem.name(), [&] { sem.try_set_permits(3, lease); });
  }
  // PermitExpirableSemaphore: Duration::max() is its no_expiry; one past the limit is refused.
  auto pes = client.permit_expirable_semaphore(unique_name("pes:"));
  pes.try_set_permits(1);
  try {
    pes.acquire(kJustOver);
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const redisync::InvalidArgument&) {
  }
  EXPECT_EQ(pes.available_permits(), 1);
}

TEST(DurationLimits, LeaseAtTheLimitIsStoredWithAnExpiry) {
  RedisServer server;
  redisync::Client client(redisync::Config::from_url(server.url()));
  auto lock = client.lock(unique_name("lock:"));
  lock.lock(redisync::max_duration);
  EXPECT_GT(server.command({"PTTL", lock.name()}).as_integer(), 0);
  lock.unlock();
}

TEST(DurationLimits, ConfigDurationRedisCannotStoreIsAConfigError) {
  auto cfg = redisync::Config::from_url("redis://127.0.0.1:6379");
  cfg.lock_watchdog_timeout = kHuge;
  EXPECT_THROW(cfg.validate(), redisync::ConfigError);
  cfg.lock_watchdog_timeout = kJustOver;
  EXPECT_THROW(cfg.validate(), redisync::ConfigError);
  cfg = redisync::Config::from_url("redis://127.0.0.1:6379");
  cfg.fair_lock_wait_timeout = kHuge;
  EXPECT_THROW(cfg.validate(), redisync::ConfigError);
  cfg = redisync::Config::from_url("redis://127.0.0.1:6379");
  cfg.timeout = kHuge;
  EXPECT_THROW(cfg.validate(), redisync::ConfigError);
  cfg = redisync::Config::from_url("redis://127.0.0.1:6379");
  cfg.subscription_linger = kHuge;
  EXPECT_THROW(cfg.validate(), redisync::ConfigError);
  cfg = redisync::Config::from_url("redis://127.0.0.1:6379");
  cfg.timeout = redisync::max_duration;
  cfg.retry_attempts = 2;  // the release record would live 2 * max_duration
  EXPECT_THROW(cfg.validate(), redisync::ConfigError);
}

// A wait longer than anything the steady clock can add means "no limit", not an overflow into
// an instant timeout.
TEST(DurationLimits, WaitTooLongToAddToTheClockMeansNoLimit) {
  RedisServer server;
  redisync::Client a(redisync::Config::from_url(server.url()));
  redisync::Client b(redisync::Config::from_url(server.url()));
  const auto name = unique_name("lock:");
  auto check = [&](const std::string& label, auto&& wait_on_b, auto&& hold_on_a,
                   auto&& release_on_a) {
    hold_on_a();
    auto waiter = std::async(std::launch::async, wait_on_b);
    EXPECT_EQ(waiter.wait_for(300ms), std::future_status::timeout) << label;  // really waiting
    release_on_a();
    ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready) << label;
    EXPECT_TRUE(waiter.get()) << label;
  };
  auto la = a.lock(name);
  auto lb = b.lock(name);
  check("lock hours::max", [&] { bool r = lb.try_lock_for(std::chrono::hours::max()); if (r) lb.unlock(); return r; },
        [&] { la.lock(); }, [&] { la.unlock(); });
  check("lock Duration::max", [&] { bool r = lb.try_lock_for(kHuge, 10s); if (r) lb.unlock(); return r; },
        [&] { la.lock(); }, [&] { la.unlock(); });
  auto fa = a.fair_lock(name + "f");
  auto fb = b.fair_lock(name + "f");
  check("fair", [&] { bool r = fb.try_lock_for(std::chrono::hours::max()); if (r) fb.unlock(); return r; },
        [&] { fa.lock(); }, [&] { fa.unlock(); });
  auto sa = a.semaphore(name + "s");
  auto sb = b.semaphore(name + "s");
  check("semaphore", [&] { bool r = sb.try_acquire_for(std::chrono::hours::max()); if (r) sb.release(); return r; },
        [&] { sa.try_set_permits(0); }, [&] { sa.release(); });
  auto latch_a = a.count_down_latch(name + "l");
  auto latch_b = b.count_down_latch(name + "l");
  check("latch", [&] { return latch_b.wait_for(std::chrono::hours::max()); },
        [&] { latch_a.try_set_count(1); }, [&] { latch_a.count_down(); });
  redisync::MultiLock ma{a.lock(name + "m")};
  redisync::MultiLock mb{b.lock(name + "m")};
  check("multi", [&] { bool r = mb.try_lock_for(std::chrono::hours::max()); if (r) mb.unlock(); return r; },
        [&] { ma.lock(); }, [&] { ma.unlock(); });
}
