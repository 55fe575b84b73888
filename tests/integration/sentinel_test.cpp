// SPDX-License-Identifier: Apache-2.0
// Sentinel topology: 1 master, 1 replica, 3 sentinels on loopback. The master is killed and
// the Client must follow the failover.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <thread>

#include "redisync/redisync.h"
#include "support/fault_proxy.h"
#include "support/redis_server.h"
#include "support/replication.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::Direction;
using redisync::test::FaultProxy;
using redisync::test::RedisServer;
using redisync::test::replicas_streaming;
using redisync::test::ServerOptions;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

class SentinelDeployment {
 public:
  /// With `replication_proxy`, the replica replicates through a FaultProxy, so a test can cut
  /// the replication stream. The sentinels would then re-point the replica at the master's
  /// own address once it has reported "another" master for failover-timeout: that timeout is
  /// raised to 60 s, far beyond such a test.
  explicit SentinelDeployment(bool replication_proxy = false) {
    master_ = std::make_unique<RedisServer>();
    std::uint16_t upstream = master_->port();
    if (replication_proxy) {
      proxy_ = std::make_unique<FaultProxy>(master_->port());
      upstream = proxy_->port();
    }
    replica_ = std::make_unique<RedisServer>(ServerOptions{
        .extra_args = {"--replicaof", "127.0.0.1", std::to_string(upstream)}});
    const std::string conf = "sentinel monitor mymaster 127.0.0.1 " +
                             std::to_string(master_->port()) + " 2\n" +
                             "sentinel down-after-milliseconds mymaster 1000\n"
                             "sentinel failover-timeout mymaster " +
                             (replication_proxy ? "60000" : "4000") + "\n" +
                             "sentinel parallel-syncs mymaster 1";
    for (int i = 0; i < 3; ++i) {
      sentinels_.push_back(std::make_unique<RedisServer>(ServerOptions{.sentinel_config = conf}));
    }
    // Ready when the replica streams (support/replication.h) and every sentinel knows it and
    // the other sentinels.
    ready_ = replicas_streaming(*master_) && wait_until(
        [&] {
          for (auto& s : sentinels_) {
            auto m = s->command({"SENTINEL", "MASTER", "mymaster"});
            if (m.kind != redisync::test::Reply::Kind::array) return false;
            std::string replicas, others;
            for (std::size_t i = 0; i + 1 < m.elements.size(); i += 2) {
              if (m.elements[i].str == "num-slaves") replicas = m.elements[i + 1].str;
              if (m.elements[i].str == "num-other-sentinels") others = m.elements[i + 1].str;
            }
            if (replicas != "1" || others != "2") return false;
          }
          return true;
        },
        20s, 100ms);
  }

  std::string url() const {
    std::string u = "redis-sentinel://";
    for (std::size_t i = 0; i < sentinels_.size(); ++i) {
      if (i) u += ",";
      u += "127.0.0.1:" + std::to_string(sentinels_[i]->port());
    }
    return u + "/mymaster";
  }
  redisync::Config config() const {
    auto cfg = redisync::Config::from_url(url());
    cfg.timeout = 500ms;
    cfg.connect_timeout = 500ms;
    cfg.retry_attempts = 40;  // bridge the failover (about 2-5 s here)
    cfg.retry_interval = 250ms;
    cfg.reconnection_delay_max = 250ms;
    cfg.subscription_linger = 100ms;
    return cfg;
  }
  bool ready() const { return ready_; }
  RedisServer& master() { return *master_; }
  FaultProxy* replication_proxy() { return proxy_.get(); }
  RedisServer& replica() { return *replica_; }
  // True once the sentinels report the replica as the master.
  bool failed_over() {
    try {
      auto a = sentinels_[0]->command({"SENTINEL", "GET-MASTER-ADDR-BY-NAME", "mymaster"});
      return a.kind == redisync::test::Reply::Kind::array && a.elements.size() == 2 &&
             a.elements[1].as_string() == std::to_string(replica_->port());
    } catch (const std::exception&) {
      return false;
    }
  }

 private:
  std::unique_ptr<RedisServer> master_, replica_;
  std::unique_ptr<FaultProxy> proxy_;
  std::vector<std::unique_ptr<RedisServer>> sentinels_;
  bool ready_ = false;
};

// EXISTS through the fixture's admin connection; -1 while the server refuses (sentinels
// reconfigure replicas with CLIENT KILL, which drops admin connections too).
long long exists(RedisServer& server, const std::string& key) {
  try {
    return server.command({"EXISTS", key}).as_integer();
  } catch (const std::exception&) {
    return -1;
  }
}

}  // namespace

TEST(SentinelTest, DiscoversTheMasterAndLocks) {
  SentinelDeployment d;
  ASSERT_TRUE(d.ready());
  redisync::Client client(d.config());
  auto lock = client.lock(unique_name("lock:"));
  lock.lock();
  EXPECT_EQ(d.master().command({"EXISTS", lock.name()}).as_integer(), 1);
  lock.unlock();
  EXPECT_EQ(d.master().command({"EXISTS", lock.name()}).as_integer(), 0);
}

TEST(SentinelTest, FailoverKeepsLocksWorkingAndWakesWaiters) {
  SentinelDeployment d;
  ASSERT_TRUE(d.ready());
  redisync::Client a(d.config()), b(d.config());
  const auto name = unique_name("lock:");
  auto la = a.lock(name);
  la.lock(60s);
  ASSERT_TRUE(wait_until(
      [&] { return exists(d.replica(), name) == 1; }, 5s));

  auto waiter = std::async(std::launch::async, [&] { return b.lock(name).try_lock_for(40s); });
  std::this_thread::sleep_for(300ms);
  d.master().kill();
  ASSERT_TRUE(wait_until([&] { return d.failed_over(); }, 30s, 100ms));

  // The holder releases on the new master; the waiter, resubscribed there, gets the lock.
  EXPECT_TRUE(wait_until(
      [&] {
        auto r = la.release();
        return r.outcome == redisync::ReleaseOutcome::released;
      },
      15s, 200ms));
  ASSERT_EQ(waiter.wait_for(20s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());

  // New locks work on the promoted replica.
  auto other = a.lock(unique_name("after:"));
  other.lock();
  EXPECT_TRUE(wait_until([&] { return exists(d.replica(), other.name()) == 1; }, 5s));
  other.unlock();
}

TEST(SentinelTest, LockWhoseLeaseRanOutDuringFailoverIsReportedLost) {
  SentinelDeployment d;
  ASSERT_TRUE(d.ready());
  auto cfg = d.config();
  cfg.lock_watchdog_timeout = 900ms;  // shorter than the failover
  redisync::Client client(cfg);
  std::atomic<int> lost{0};
  client.on_lock_lost([&](const redisync::LockLostEvent&) { ++lost; });
  auto lock = client.lock(unique_name("lock:"));
  lock.lock();
  d.master().kill();
  ASSERT_TRUE(wait_until([&] { return lost.load() == 1; }, 30s, 50ms));
  ASSERT_TRUE(wait_until([&] { return d.failed_over(); }, 30s, 100ms));
  EXPECT_THROW(lock.unlock_checked(), redisync::LockLostError);
}

// A malformed +switch-master message (port out of range or no number, fields missing or
// extra) changes nothing: the client keeps its connections to the master, where a valid
// message would have dropped them. A real sentinel accepts PUBLISH only on its hello channel,
// so the first "sentinel" listed is the master itself: it cannot answer SENTINEL (the next
// one is asked), but the client's +switch-master subscription goes to it.
TEST(SentinelTest, MalformedSwitchMasterMessagesChangeNothing) {
  RedisServer master;
  const std::string port = std::to_string(master.port());
  RedisServer sentinel(
      ServerOptions{.sentinel_config = "sentinel monitor mymaster 127.0.0.1 " + port + " 1"});
  auto cfg = redisync::Config::from_url("redis-sentinel://127.0.0.1:" + port + ",127.0.0.1:" +
                                        std::to_string(sentinel.port()) + "/mymaster");
  cfg.timeout = 500ms;
  cfg.connect_timeout = 500ms;
  cfg.reconnection_delay_max = 100ms;
  redisync::Client client(cfg);
  const long long id = client.execute({"CLIENT", "ID"}).integer;
  ASSERT_TRUE(wait_until(
      [&] {
        auto r = master.command({"PUBSUB", "NUMSUB", "+switch-master"});
        return r.elements.size() == 2 && r.elements[1].as_integer() == 1;
      },
      10s));
  const std::string old_addr = "mymaster 127.0.0.1 " + port + " 127.0.0.1 ";
  for (const std::string& message : std::vector<std::string>{
           old_addr + "70000", old_addr + "65536", old_addr + "0", old_addr + "-1",
           old_addr + "abc", old_addr + "1x", old_addr + "4294967297", old_addr + "1 extra",
           old_addr, "mymaster 127.0.0.1 " + port, "mymaster", std::string(),
           "mymaster 127.0.0.1 " + port + "  70000"}) {
    SCOPED_TRACE(message);
    EXPECT_EQ(master.command({"PUBLISH", "+switch-master", message}).as_integer(), 1);
  }
  // Bounded: 20 looks 50 ms apart; a followed message would drop the connection at once.
  for (int i = 0; i < 20; ++i) {
    std::this_thread::sleep_for(50ms);
    ASSERT_EQ(client.execute({"CLIENT", "ID"}).integer, id) << "the connection was moved";
  }
  auto lock = client.lock(unique_name("lock:"));
  lock.lock();
  EXPECT_EQ(master.command({"EXISTS", lock.name()}).as_integer(), 1);
  lock.unlock();
}

// A failover that loses the acquire (issue 18): the replica stops receiving the replication
// stream, a holder acquires on the master, the master dies and the replica, which never got
// the lock, is promoted. With the replica acknowledgement (WAIT, the default) the acquire is
// refused instead; without it, the new master lets a second client in, and the first holder
// must be told (lost-lock handler, unlock_checked() raising LockLostError): a double hold is
// possible without WAIT, but never silent. For every kind the watchdog renews.
struct PlainKind {
  static redisync::Lock make(redisync::Client& c, const std::string& n) { return c.lock(n); }
};
struct FairKind {
  static redisync::FairLock make(redisync::Client& c, const std::string& n) {
    return c.fair_lock(n);
  }
};
struct FencedKind {
  static redisync::FencedLock make(redisync::Client& c, const std::string& n) {
    return c.fenced_lock(n);
  }
};
struct WriteKind {
  static redisync::WriteLock make(redisync::Client& c, const std::string& n) {
    return c.read_write_lock(n).write_lock();
  }
};

template <class Kind>
class LostAcquireFailover : public ::testing::Test {};
using FailoverKinds = ::testing::Types<PlainKind, FairKind, FencedKind, WriteKind>;
TYPED_TEST_SUITE(LostAcquireFailover, FailoverKinds);

TYPED_TEST(LostAcquireFailover, IsReportedNotSilent) {
  SentinelDeployment d(/*replication_proxy=*/true);
  ASSERT_TRUE(d.ready());
  const auto name = unique_name("lost-acquire:");

  auto with_wait = d.config();
  with_wait.slaves_sync_timeout = 300ms;
  with_wait.retry_attempts = 2;
  auto no_wait = d.config();
  no_wait.check_lock_synced_slaves = false;
  no_wait.lock_watchdog_timeout = 3000ms;  // renewals every second
  redisync::Client careful(with_wait), holder(no_wait), other(d.config());
  std::atomic<int> lost{0};
  // The event names the lock ("NAME", or "NAME (write lock)" for a read-write lock's side).
  holder.on_lock_lost([&](const redisync::LockLostEvent& e) {
    if (e.name.rfind(name, 0) == 0) ++lost;
  });
  careful.execute({"PING"});
  holder.execute({"PING"});

  d.replication_proxy()->set_blackhole(Direction::both, true);
  // With WAIT: no replica acknowledges, so nothing is held (and nothing is left on the master).
  auto refused = TypeParam::make(careful, name);
  if (refused.try_lock_for(1s)) {
    refused.unlock();  // else the holder below would wait for this hold forever
    FAIL() << "acquired with WAIT on while replication was cut\n"
           << d.master().command({"INFO", "replication"}).as_string() << d.replica().log_tail();
  }
  EXPECT_EQ(exists(d.master(), name), 0);
  // Without WAIT: held on the master only.
  auto lock = TypeParam::make(holder, name);
  lock.lock();
  EXPECT_EQ(exists(d.master(), name), 1);
  EXPECT_EQ(exists(d.replica(), name), 0);

  d.master().kill();
  ASSERT_TRUE(wait_until([&] { return d.failed_over(); }, 30s, 100ms));
  // The promoted replica never had the lock: another client gets it.
  auto second = TypeParam::make(other, name);
  ASSERT_TRUE(second.try_lock_for(20s));
  // The first holder's next renewal finds its hold gone on the new master: it is told.
  ASSERT_TRUE(wait_until([&] { return lost.load() >= 1; }, 20s, 50ms))
      << "the double hold went unreported";
  EXPECT_FALSE(lock.is_held_by_current_thread());
  EXPECT_THROW(lock.unlock_checked(), redisync::LockLostError);
  EXPECT_TRUE(second.is_held_by_current_thread());  // the loser's unlock freed nothing
  second.unlock();
}
