// SPDX-License-Identifier: Apache-2.0
// Replica acknowledgement (docs/wire-format.md §1.7): with a replica, each acquire is followed by WAIT; an
// acquire no replica acknowledged is rolled back and retried, then fails cleanly.
#include <gtest/gtest.h>

#include <memory>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/replication.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::replicas_streaming;
using redisync::test::ServerOptions;
using redisync::test::unique_name;

namespace {

struct Replicated {
  RedisServer master;
  RedisServer replica{ServerOptions{
      .extra_args = {"--replicaof", "127.0.0.1", std::to_string(master.port())}}};
  bool ready() { return replicas_streaming(master); }
  redisync::Config config() {
    auto cfg = redisync::Config::from_url(master.url());
    cfg.timeout = 2000ms;
    cfg.slaves_sync_timeout = 300ms;
    cfg.retry_attempts = 2;
    cfg.retry_interval = 100ms;
    return cfg;
  }
};

}  // namespace

TEST(ReplicaAckTest, AcquireIsAcknowledgedByTheReplica) {
  Replicated r;
  ASSERT_TRUE(r.ready());
  redisync::Client client(r.config());
  client.execute({"PING"});
  auto lock = client.lock(unique_name("lock:"));
  lock.lock();
  // WAIT returned only after the replica had the key.
  EXPECT_EQ(r.replica.command({"EXISTS", lock.name()}).as_integer(), 1);
  lock.unlock();
}

TEST(ReplicaAckTest, UnacknowledgedAcquireFailsCleanlyAndLeavesNoKey) {
  Replicated r;
  ASSERT_TRUE(r.ready());
  redisync::Client client(r.config());
  client.execute({"PING"});
  auto lock = client.lock(unique_name("lock:"));
  r.replica.pause();
  try {
    lock.lock();
    ADD_FAILURE() << "expected TimeoutError";
  } catch (const redisync::TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("replica"), std::string::npos) << e.what();
  }
  EXPECT_EQ(r.master.command({"EXISTS", lock.name()}).as_integer(), 0);
  EXPECT_FALSE(lock.try_lock_for(200ms));  // a timed wait that runs out is just "not acquired"
  EXPECT_EQ(r.master.command({"EXISTS", lock.name()}).as_integer(), 0);
  r.replica.resume();
  EXPECT_TRUE(lock.try_lock_for(5s));
  lock.unlock();
}

TEST(ReplicaAckTest, CheckCanBeTurnedOff) {
  Replicated r;
  ASSERT_TRUE(r.ready());
  auto cfg = r.config();
  cfg.check_lock_synced_slaves = false;
  redisync::Client client(cfg);
  r.replica.pause();
  auto lock = client.lock(unique_name("lock:"));
  lock.lock();  // no WAIT: succeeds although the replica cannot acknowledge
  EXPECT_TRUE(lock.is_held_by_current_thread());
  lock.unlock();
  r.replica.resume();
}

// The other lock kinds run the same acknowledgement: a hold no replica has is rolled back,
// retried, and finally reported, leaving nothing behind.
TEST(ReplicaAckTest, OtherKindsAreAcknowledgedOrRolledBack) {
  Replicated r;
  ASSERT_TRUE(r.ready());
  redisync::Client client(r.config());
  client.execute({"PING"});
  auto fair = client.fair_lock(unique_name("fair:"));
  auto fenced = client.fenced_lock(unique_name("fenced:"));
  auto rw = client.read_write_lock(unique_name("rw:"));

  // Acknowledged: the replica has each key once the acquire returns.
  fair.lock();
  const auto token = fenced.lock_and_get_token();
  rw.lock_shared();
  EXPECT_EQ(r.replica.command({"EXISTS", fair.name()}).as_integer(), 1);
  EXPECT_EQ(r.replica.command({"EXISTS", fenced.name()}).as_integer(), 1);
  EXPECT_EQ(r.replica.command({"EXISTS", rw.name()}).as_integer(), 1);
  fair.unlock();
  fenced.unlock();
  rw.unlock_shared();

  r.replica.pause();
  EXPECT_THROW(fair.try_lock_for(redisync::Duration{5000}), redisync::TimeoutError);
  EXPECT_THROW(fenced.lock_and_get_token(), redisync::TimeoutError);
  EXPECT_THROW(rw.lock(), redisync::TimeoutError);
  EXPECT_THROW(rw.lock_shared(), redisync::TimeoutError);
  for (const auto& name : {fair.name(), fenced.name(), rw.name()}) {
    EXPECT_EQ(r.master.command({"HLEN", name}).as_integer(), 0) << name;
  }
  EXPECT_FALSE(fair.is_held_by_current_thread());
  EXPECT_FALSE(fenced.is_held_by_current_thread());
  r.replica.resume();

  // Afterwards everything works again, and the fencing token kept increasing.
  ASSERT_TRUE(replicas_streaming(r.master));
  EXPECT_GT(fenced.lock_and_get_token(), token);
  fenced.unlock();
  EXPECT_TRUE(fair.try_lock_for(5s));
  fair.unlock();
}

namespace {
long long wait_calls(RedisServer& server) {
  const std::string info = server.command({"INFO", "commandstats"}).as_string();
  const auto pos = info.find("cmdstat_wait:calls=");
  return pos == std::string::npos ? 0 : std::stoll(info.substr(pos + 19));
}
}  // namespace

// A release no replica acknowledged is resent with the same release record and waited for
// again (docs/wire-format.md §1.7); the master has it, so unlock() then reports success.
TEST(ReplicaAckTest, UnacknowledgedReleaseIsResentWithTheSameRecord) {
  Replicated r;
  ASSERT_TRUE(r.ready());
  auto cfg = r.config();  // retry_attempts 2
  redisync::Client client(cfg);
  auto lock = client.lock(unique_name("lock:"));
  auto fair = client.fair_lock(unique_name("fair:"));
  lock.lock();
  fair.lock();
  r.replica.pause();
  r.master.command({"CONFIG", "RESETSTAT"});
  EXPECT_NO_THROW(lock.unlock());
  EXPECT_EQ(wait_calls(r.master), 1 + cfg.retry_attempts);
  EXPECT_NO_THROW(fair.unlock());
  EXPECT_EQ(wait_calls(r.master), 2 * (1 + cfg.retry_attempts));
  EXPECT_EQ(r.master.command({"EXISTS", lock.name()}).as_integer(), 0);
  EXPECT_EQ(r.master.command({"EXISTS", fair.name()}).as_integer(), 0);
  r.replica.resume();
}
