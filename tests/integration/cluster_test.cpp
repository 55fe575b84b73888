// SPDX-License-Identifier: Apache-2.0
// Cluster topology: 3 masters with one replica each (6 redis-server nodes, created with
// redis-cli --cluster create), started once per test process. Locks are routed by slot,
// waiters use sharded pub/sub, redirects (MOVED, ASK) are followed while a slot is resharded.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "lock_kinds_util.h"
#include "redisync/redisync.h"
#include "support/redis_cluster.h"
#include "support/redis_server.h"
#include "support/server_stats.h"
#include "support/shared_cluster_test.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisCluster;
using redisync::test::RedisServer;
using redisync::test::command_calls;
using redisync::test::lock_channel;
using redisync::test::shard_subscribers;
using redisync::test::unique_name;
using redisync::test::wait_until;
namespace kinds = redisync::test::kinds;

class ClusterTest : public redisync::test::SharedClusterTest<ClusterTest> {
 protected:
  // The master serving `key`'s slot.
  static RedisServer& master_of(const std::string& key) {
    return cluster_->node(cluster_->master_of_slot(cluster_->key_slot(key)));
  }

  // Three grant rounds in a cluster on a fresh lock "<kind>:<unique>" (grant lease 60 s).
  // Its registrations "<registrations>{<name>}" share its slot. `a`
  // holds (`hold(lock, round)`), `b`'s waiter registers (`registered(master, key, field)`, its
  // field "<client id>:<thread id>" + `suffix`), `a` releases (`release(lock, round)`), and
  // the waiter's lock() returns holding the grant; `granted(master, name)` checks more.
  template <class LockOf, class Hold, class Release, class Registered, class Granted>
  static void grant_rounds(const std::string& kind, const std::string& registrations,
                           const std::string& suffix, LockOf lock_of, Hold hold, Release release,
                           Registered registered, Granted granted) {
    auto cfg = config();
    cfg.handoff = redisync::Handoff::grant;
    cfg.grant_lease = 60000ms;
    const std::string name = unique_name(kind + ":");
    const std::string key = registrations + "{" + name + "}";
    ASSERT_EQ(cluster_->key_slot(key), cluster_->key_slot(name));
    RedisServer& master = master_of(name);
    redisync::Client a(cfg), b(cfg);
    auto la = lock_of(a, name);
    for (int r = 0; r < 3; ++r) {
      hold(la, r);
      std::string field;
      std::atomic<bool> known{false};
      auto waiter = std::async(std::launch::async, [&] {
        auto lb = lock_of(b, name);
        field = b.id() + ":" + std::to_string(redisync::Client::current_thread_id()) + suffix;
        known = true;
        // Registered when the release ran, so the release granted it. (The PTTL cannot tell:
        // an attempt in flight when the grant is made takes it and sets the waiter's lease.)
        const bool got = lb.try_lock_for(10s, 10s);
        const bool grant = granted(master, name);
        if (got) lb.unlock();
        return got && grant;
      });
      ASSERT_TRUE(wait_until([&] { return known.load(); }, 10s));
      ASSERT_TRUE(wait_until([&] { return registered(master, key, field); }, 10s))
          << "round " << r;
      release(la, r);
      ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
      EXPECT_TRUE(waiter.get()) << "round " << r;
    }
  }
};

TEST_F(ClusterTest, LocksSpreadOverAllMastersAndRenewPerNode) {
  auto cfg = config();
  // Renewal rounds every ~667 ms: short enough for several rounds in this test, long enough
  // that a loaded machine (sanitizer builds) cannot let a lease lapse between two rounds.
  cfg.lock_watchdog_timeout = 2000ms;
  redisync::Client client(cfg);
  std::atomic<int> lost{0};
  client.on_lock_lost([&](const redisync::LockLostEvent&) { ++lost; });

  const std::string prefix = unique_name("spread:");
  std::vector<redisync::Lock> locks;
  for (int i = 0; i < 200; ++i) locks.push_back(client.lock(prefix + ":" + std::to_string(i)));
  for (auto& l : locks) l.lock();  // watchdog mode

  // Each key lives on the master of its slot, and the names cover every master.
  std::set<std::uint16_t> masters_hit;
  for (auto& l : locks) {
    RedisServer& m = master_of(l.name());
    EXPECT_EQ(m.command({"EXISTS", l.name()}).as_integer(), 1) << l.name();
    masters_hit.insert(m.port());
  }
  EXPECT_EQ(masters_hit.size(), 3u);

  // Several renewal rounds later (a CROSSSLOT batch would fail and the leases would run out)
  // every lock is still held. The 200 names fall in about 200 slots; batched per slot that
  // was a call per hold per round (3 or more rounds here: 600 calls or more); batched per
  // node (Redis 7, lock_renew_node.lua) it is a few calls per node per round.
  auto renewal_calls = [] {
    long long calls = 0;
    for (auto m : cluster_->masters()) calls += command_calls(cluster_->node(m), "evalsha");
    return calls;
  };
  const long long calls_before = renewal_calls();
  std::this_thread::sleep_for(2500ms);
  const long long calls = renewal_calls() - calls_before;
  EXPECT_EQ(lost.load(), 0);
  EXPECT_GT(calls, 0);
  EXPECT_LT(calls, 200) << "renewal calls in 3 rounds of 200 holds on 3 masters";
  for (auto& l : locks) {
    EXPECT_TRUE(l.is_held_by_current_thread()) << l.name();
    EXPECT_EQ(master_of(l.name()).command({"EXISTS", l.name()}).as_integer(), 1);
  }
  for (auto& l : locks) l.unlock();
  for (auto& l : locks) EXPECT_EQ(master_of(l.name()).command({"EXISTS", l.name()}).as_integer(), 0);
}

TEST_F(ClusterTest, MutualExclusionAcrossProcesses) {
  const std::string name = unique_name("mutex:");
  const std::string counter = "{" + name + "}:counter";  // same slot as the lock
  std::vector<pid_t> pids;
  for (int p = 0; p < 4; ++p) {
    pids.push_back(kinds::spawn_worker({"counter", cluster_->url(), name, counter, "100"}));
  }
  for (auto pid : pids) kinds::expect_clean_exit(pid);
  EXPECT_EQ(master_of(name).command({"GET", counter}).as_string(), "400");
}

TEST_F(ClusterTest, FairReadWriteLocksAndSemaphoreWork) {
  for (const std::string kind : {"fair", "rw"}) {
    const std::string name = unique_name(kind + ":");
    const std::string counter = "{" + name + "}:counter";
    std::vector<pid_t> pids;
    for (int p = 0; p < 2; ++p) {
      pids.push_back(
          kinds::spawn_worker({"kind-counter", kind, cluster_->url(), name, counter, "50"}));
    }
    for (auto pid : pids) kinds::expect_clean_exit(pid);
    EXPECT_EQ(master_of(name).command({"GET", counter}).as_string(), "100") << kind;
  }

  redisync::Client a(config()), b(config());
  auto rw = a.read_write_lock(unique_name("rw:"));
  rw.lock_shared();
  auto other = b.read_write_lock(rw.name());
  EXPECT_FALSE(other.try_lock());        // a writer waits
  EXPECT_TRUE(other.try_lock_shared());  // readers share
  other.unlock_shared();
  rw.unlock_shared();

  // A waiter on the semaphore is woken by a release from another client.
  auto sem = a.semaphore(unique_name("sem:"));
  ASSERT_TRUE(sem.try_set_permits(1));
  sem.acquire();
  auto waiter = std::async(std::launch::async, [&] {
    return b.semaphore(sem.name()).try_acquire_for(1, 10s);
  });
  std::this_thread::sleep_for(100ms);
  sem.release();
  ASSERT_EQ(waiter.wait_for(15s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
}

TEST_F(ClusterTest, WakeUpsUseShardedPubSubAndFewAttempts) {
  redisync::Client a(config()), b(config());
  const std::string name = unique_name("handoff:");
  auto la = a.lock(name);
  auto lb = b.lock(name);
  RedisServer& master = master_of(name);

  // A warm-up round loads the scripts on the node.
  la.lock(10s);
  la.unlock();
  const int rounds = 10;
  long long total_attempts = 0;
  for (int r = 0; r < rounds; ++r) {
    la.lock(10s);
    std::atomic<long long> before{-1};
    // Returns the scripts the master ran from the release until this waiter held the lock.
    auto waiter = std::async(std::launch::async, [&] {
      lb.lock(10s);
      const long long calls = command_calls(master, "evalsha") - before.load();
      lb.unlock();
      return calls;
    });
    // The waiter subscribes with SSUBSCRIBE on the master of the channel's slot.
    ASSERT_TRUE(wait_until([&] { return shard_subscribers(master, lock_channel(name)) == 1; },
                           10s));
    std::this_thread::sleep_for(100ms);  // its attempt after subscribing has been made
    before = command_calls(master, "evalsha");
    la.unlock();
    ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
    const long long attempts = waiter.get() - 1;  // minus the release
    EXPECT_LE(attempts, 3) << "round " << r;
    total_attempts += attempts;
  }
  std::cout << "[ cluster  ] acquire attempts per handoff: "
            << static_cast<double>(total_attempts) / rounds << "\n";
  EXPECT_LE(total_attempts, 2 * rounds);
}

// Direct handoff in a cluster: the registrations and the grant channel share the lock's slot,
// waiters hear grants with SSUBSCRIBE on its master, and the release hands the lock over.
TEST_F(ClusterTest, GrantModeHandsTheLockOverOnTheLocksSlot) {
  auto cfg = config();
  cfg.handoff = redisync::Handoff::grant;
  redisync::Client a(cfg), b(cfg);
  const std::string name = unique_name("grant:");
  const std::string registrations = "redisync_lock_grant:{" + name + "}";
  const std::string grants = "redisync_grant__channel:{" + name + "}:" + b.id();
  ASSERT_EQ(cluster_->key_slot(registrations), cluster_->key_slot(name));
  ASSERT_EQ(cluster_->key_slot(grants), cluster_->key_slot(name));
  auto la = a.lock(name);
  RedisServer& master = master_of(name);
  for (int r = 0; r < 5; ++r) {
    la.lock(10s);
    std::string field;
    std::atomic<bool> known{false};
    auto waiter = std::async(std::launch::async, [&] {
      auto lb = b.lock(name);
      field = b.id() + ":" + std::to_string(redisync::Client::current_thread_id());
      known = true;
      const bool got = lb.try_lock_for(10s);
      auto in_hash = master.command({"HGET", name, field});
      if (got) lb.unlock();
      return got && !in_hash.is_nil() && in_hash.as_string() == "1";
    });
    ASSERT_TRUE(wait_until([&] { return known.load(); }, 10s));
    ASSERT_TRUE(wait_until(
        [&] { return !master.command({"ZSCORE", registrations, field}).is_nil(); }, 10s))
        << "round " << r;
    EXPECT_GE(shard_subscribers(master, grants), 1);  // the waiter (the holder's may linger)
    la.unlock();
    ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready);
    EXPECT_TRUE(waiter.get()) << "round " << r;
  }
}

// The pub/sub heartbeat dates grant messages on every shard's connection (SSUBSCRIBE, one
// connection per master): a grant made seconds after the waiter registered (five grant leases)
// is taken on its message, with no attempt of its own, on each of the three masters.
TEST_F(ClusterTest, GrantsLongAfterTheRegistrationAreTakenOnTheirMessageOnEveryShard) {
  struct Attempts : redisync::Metrics {
    std::mutex m;
    std::vector<double> per_acquire;
    void increment(const redisync::MetricLabels&, redisync::Counter,
                   std::uint64_t) noexcept override {}
    void observe(const redisync::MetricLabels&, redisync::Histogram h, double v) noexcept override {
      std::lock_guard g(m);
      if (h == redisync::Histogram::attempts_per_acquire) per_acquire.push_back(v);
    }
  };
  auto cfg = config();
  cfg.handoff = redisync::Handoff::grant;
  cfg.grant_lease = 600ms;
  // The masters have replicas: with replica acknowledgements on, every grant is taken by an
  // attempt followed by WAIT (wire-format §18), whatever its date.
  cfg.check_lock_synced_slaves = false;
  auto attempts = std::make_shared<Attempts>();
  auto waiter_cfg = cfg;
  waiter_cfg.metrics = attempts;
  redisync::Client a(cfg), b(waiter_cfg);
  // One lock on each master.
  std::map<std::uint16_t, std::string> names;
  for (int i = 0; names.size() < 3 && i < 1000; ++i) {
    const std::string name = unique_name("grant-late:");
    names.emplace(master_of(name).port(), name);
  }
  ASSERT_EQ(names.size(), 3u);
  for (const auto& [port, name] : names) {
    auto held = a.lock(name);
    held.lock(60s);
    std::string field;
    std::atomic<bool> known{false};
    auto waiter = std::async(std::launch::async, [&, name = name] {
      auto lb = b.lock(name);
      field = b.id() + ":" + std::to_string(redisync::Client::current_thread_id());
      known = true;
      const bool got = lb.try_lock_for(20s, 30s);
      if (got) lb.unlock();
      return got;
    });
    ASSERT_TRUE(wait_until([&] { return known.load(); }, 10s));
    RedisServer& master = master_of(name);
    const std::string registrations = "redisync_lock_grant:{" + name + "}";
    ASSERT_TRUE(wait_until(
        [&] {
          return !master.command({"ZSCORE", registrations, field}).is_nil();
        },
        10s))
        << name;
    std::this_thread::sleep_for(3s);
    held.unlock();
    ASSERT_EQ(waiter.wait_for(10s), std::future_status::ready) << name;
    EXPECT_TRUE(waiter.get()) << name;
  }
  std::lock_guard g(attempts->m);
  ASSERT_EQ(attempts->per_acquire.size(), 3u);
  for (double n : attempts->per_acquire) {
    EXPECT_EQ(n, 2.0) << "before and after subscribing, and none to take the grant";
  }
}

// ReadWriteLock's write side in grant mode (docs/wire-format.md §18 "ReadWriteLock"): its own
// registrations in the lock's slot, the grant a write hold (mode = write beside W). Even
// rounds: a write release grants; odd rounds: the last reader's release.
TEST_F(ClusterTest, ReadWriteLockGrantModeGrantsAWaitingWriterOnTheLocksSlot) {
  using RW = redisync::ReadWriteLock;
  grant_rounds(
      "rw-grant", "redisync_rwlock_grant:", ":write",
      [](redisync::Client& c, const std::string& n) { return c.read_write_lock(n); },
      [](RW& rw, int r) { r % 2 ? rw.lock_shared(10s) : rw.lock(10s); },
      [](RW& rw, int r) { r % 2 ? rw.unlock_shared() : rw.unlock(); },
      [](RedisServer& m, const std::string& key, const std::string& f) {
        return !m.command({"ZSCORE", key, f}).is_nil();
      },
      [](RedisServer& m, const std::string& n) {
        auto mode = m.command({"HGET", n, "mode"});
        return !mode.is_nil() && mode.as_string() == "write";
      });
}

TEST_F(ClusterTest, FairLockGrantModeGrantsTheHeadOnTheLocksSlot) {
  grant_rounds(
      "fair-grant", "redisync_fair_grant:", "",
      [](redisync::Client& c, const std::string& n) { return c.fair_lock(n); },
      [](redisync::FairLock& l, int) { l.lock(10s); },
      [](redisync::FairLock& l, int) { l.unlock(); },
      [](RedisServer& m, const std::string& key, const std::string& f) {
        return m.command({"HEXISTS", key, f}).as_integer() == 1;
      },
      [](RedisServer&, const std::string&) { return true; });
}

TEST_F(ClusterTest, ReshardingAHeldLocksSlotIsFollowed) {
  auto cfg = config();
  // Renewals every second run into the move; the local lease deadline (lease - lease/10
  // after the last confirmed renewal) leaves a loaded machine 2.7 s to confirm one.
  cfg.lock_watchdog_timeout = 3000ms;
  redisync::Client a(cfg), b(cfg), c(cfg);
  std::atomic<int> lost{0};
  a.on_lock_lost([&](const redisync::LockLostEvent&) { ++lost; });

  const std::string name = unique_name("reshard:");
  const std::string second = "{" + name + "}:second";  // same slot, absent until locked
  const int slot = cluster_->key_slot(name);
  ASSERT_EQ(cluster_->key_slot(second), slot);
  const std::size_t from = cluster_->master_of_slot(slot);
  std::size_t to = from;
  for (auto m : cluster_->masters()) {
    if (m != from) to = m;
  }
  ASSERT_NE(to, from);

  auto held = a.lock(name);
  held.lock();  // watchdog mode
  c.execute({"EXISTS", name});  // c has loaded the map before the move
  auto waiter = std::async(std::launch::async, [&] { return b.lock(name).try_lock_for(20s); });
  ASSERT_TRUE(wait_until(
      [&] { return shard_subscribers(cluster_->node(from), lock_channel(name)) == 1; }, 10s));

  const long long asking_before = command_calls(cluster_->node(to), "asking");
  auto second_lock = a.lock(second);
  cluster_->move_slot(slot, from, to, [&] {
    // Migrating: a key that is not on the source any more (or yet) is served by the target
    // after ASK + ASKING.
    EXPECT_TRUE(second_lock.try_lock_for(0ms, 10s));
  });
  EXPECT_GT(command_calls(cluster_->node(to), "asking"), asking_before);
  EXPECT_EQ(cluster_->node(to).command({"EXISTS", second}).as_integer(), 1);

  // The first command after the move is redirected (MOVED) and still answers.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(c.execute({"EXISTS", name}).integer, 1);
  const auto moved_us = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::steady_clock::now() - t0)
                            .count();
  std::cout << "[ cluster  ] first command after the move (MOVED followed): " << moved_us
            << " us\n";

  // Renewals follow the slot to its new master: the lock outlives several leases.
  std::this_thread::sleep_for(2000ms);
  EXPECT_EQ(lost.load(), 0);
  EXPECT_TRUE(held.is_held_by_current_thread());
  EXPECT_EQ(cluster_->node(to).command({"EXISTS", name}).as_integer(), 1);

  // The source dropped the waiter's shard channel when the slot left it (sunsubscribe); the
  // waiter subscribed again on the new master, and is woken there by the release.
  EXPECT_TRUE(wait_until(
      [&] {
        return shard_subscribers(cluster_->node(to), lock_channel(name)) == 1 &&
               shard_subscribers(cluster_->node(from), lock_channel(name)) == 0;
      },
      10s));
  held.unlock();
  ASSERT_EQ(waiter.wait_for(20s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
  second_lock.unlock();
  EXPECT_EQ(cluster_->node(to).command({"EXISTS", second}).as_integer(), 0);
}

TEST(ClusterConfigTest, UnreachableSeedsFailWithTheirNames) {
  // Two ports with nobody listening: bound, then closed again.
  std::vector<std::uint16_t> ports;
  for (int i = 0; i < 2; ++i) {
    RedisServer s;
    ports.push_back(s.port());
  }
  auto cfg = redisync::Config::from_url("redis-cluster://127.0.0.1:" + std::to_string(ports[0]) +
                                        ",127.0.0.1:" + std::to_string(ports[1]));
  cfg.connect_timeout = 500ms;
  try {
    redisync::Client client(cfg);
    FAIL() << "expected ConnectionError";
  } catch (const redisync::ConnectionError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("127.0.0.1:" + std::to_string(ports[0])), std::string::npos) << what;
    EXPECT_NE(what.find("127.0.0.1:" + std::to_string(ports[1])), std::string::npos) << what;
  }
}

TEST(ClusterConfigTest, ServerWithoutClusterSupportIsRefused) {
  RedisServer plain;
  auto cfg = redisync::Config::from_url("redis-cluster://127.0.0.1:" +
                                        std::to_string(plain.port()));
  try {
    redisync::Client client(cfg);
    FAIL() << "expected ConnectionError";
  } catch (const redisync::ConnectionError& e) {
    EXPECT_NE(std::string(e.what()).find("cluster support disabled"), std::string::npos)
        << e.what();
  }
}
