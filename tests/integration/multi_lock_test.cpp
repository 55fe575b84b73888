// SPDX-License-Identifier: Apache-2.0
// redisync::MultiLock against real, independent redis-servers (one Client each): exclusion,
// waiting, mixed kinds, all-or-nothing on failure, leases, reentrancy, async forms, errors.
#include <gtest/gtest.h>

#include <asio/use_future.hpp>
#include <atomic>
#include <barrier>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "integration/lock_kinds_util.h"
#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/server_stats.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::MemberOutcome;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;
using redisync::test::kinds::config_for;

namespace {

// N independent servers with one Client each.
struct Cluster {
  explicit Cluster(int n) {
    for (int i = 0; i < n; ++i) {
      servers.push_back(std::make_unique<RedisServer>());
      clients.push_back(std::make_unique<redisync::Client>(config_for(*servers.back())));
    }
  }
  std::vector<redisync::AnyLock> locks(const std::string& name) {
    std::vector<redisync::AnyLock> out;
    for (auto& c : clients) out.emplace_back(c->lock(name));
    return out;
  }
  bool key_gone_everywhere(const std::string& key) {
    return wait_until(
        [&] {
          for (auto& s : servers) {
            if (s->running() && s->command({"EXISTS", key}).as_integer() != 0) return false;
          }
          return true;
        },
        5s);
  }
  bool no_keys(RedisServer& server) {
    return wait_until([&] { return server.command({"DBSIZE"}).as_integer() == 0; }, 5s);
  }
  std::vector<std::unique_ptr<RedisServer>> servers;
  std::vector<std::unique_ptr<redisync::Client>> clients;
};

}  // namespace

TEST(MultiLockTest, ExactlyOneOfTenContendersWins) {
  Cluster cluster(3);
  const std::string name = unique_name("ml:");
  redisync::MultiLock lock(cluster.locks(name));
  std::atomic<int> winners{0};
  std::barrier start(10), tried(10);
  std::vector<std::thread> threads;
  for (int t = 0; t < 10; ++t) {
    threads.emplace_back([&] {
      start.arrive_and_wait();
      const bool won = lock.try_lock();
      if (won) ++winners;
      tried.arrive_and_wait();  // the winner holds until everyone has tried
      if (won) lock.unlock();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(winners.load(), 1);
  EXPECT_TRUE(cluster.key_gone_everywhere(name));
}

TEST(MultiLockTest, CounterExactUnderTenWaitingThreads) {
  // Contenders that wait: a counter kept under the MultiLock by 10 threads stays exact.
  Cluster cluster(3);
  const std::string name = unique_name("ml:");
  redisync::MultiLock lock(cluster.locks(name));
  auto& counter_server = *cluster.servers[0];
  std::vector<std::thread> threads;
  for (int t = 0; t < 10; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        std::unique_lock guard(lock);
        auto v = cluster.clients[0]->execute({"GET", "counter"});
        const long long n = v.is_nil() ? 0 : std::stoll(v.str);
        cluster.clients[0]->execute({"SET", "counter", std::to_string(n + 1)});
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter_server.command({"GET", "counter"}).as_string(), "100");
  EXPECT_TRUE(cluster.key_gone_everywhere(name));
}

TEST(MultiLockTest, WaiterGetsItWhenHolderReleases) {
  Cluster cluster(3);
  const std::string name = unique_name("ml:");
  redisync::MultiLock lock(cluster.locks(name));
  ASSERT_TRUE(lock.try_lock());
  std::promise<bool> waiting_started;
  auto waiter = std::async(std::launch::async, [&] {
    waiting_started.set_value(true);
    const bool got = lock.try_lock_for(20s);
    if (got) lock.unlock();
    return got;
  });
  waiting_started.get_future().wait();
  std::this_thread::sleep_for(200ms);
  lock.unlock();
  ASSERT_EQ(waiter.wait_for(30s), std::future_status::ready);
  EXPECT_TRUE(waiter.get());
  EXPECT_TRUE(cluster.key_gone_everywhere(name));
}

TEST(MultiLockTest, BlockingLockWaitsForHolder) {
  Cluster cluster(2);
  const std::string name = unique_name("ml:");
  redisync::MultiLock lock(cluster.locks(name));
  lock.lock();
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    lock.lock();
    got = true;
    lock.unlock();
  });
  std::this_thread::sleep_for(300ms);
  EXPECT_FALSE(got.load());
  lock.unlock();
  waiter.join();
  EXPECT_TRUE(got.load());
}

TEST(MultiLockTest, MixedKindsOnDifferentServers) {
  Cluster cluster(3);
  const std::string a = unique_name("ml-a:"), b = unique_name("ml-b:"), c = unique_name("ml-c:");
  auto plain = cluster.clients[0]->lock(a);
  auto fair = cluster.clients[1]->fair_lock(b);
  auto rw = cluster.clients[2]->read_write_lock(c);
  redisync::MultiLock lock{plain, fair, rw.write_lock()};
  EXPECT_EQ(lock.size(), 3u);
  {
    std::unique_lock guard(lock);
    EXPECT_EQ(cluster.servers[0]->command({"EXISTS", a}).as_integer(), 1);
    EXPECT_EQ(cluster.servers[1]->command({"EXISTS", b}).as_integer(), 1);
    EXPECT_EQ(cluster.servers[2]->command({"HGET", c, "mode"}).as_string(), "write");
    EXPECT_TRUE(lock.is_held_by_current_thread());
    // Each member is really held: another thread can take none of them.
    std::thread([&] {
      EXPECT_FALSE(plain.try_lock());
      EXPECT_FALSE(fair.try_lock());
      EXPECT_FALSE(rw.try_lock_shared());
      EXPECT_FALSE(lock.try_lock());
    }).join();
  }
  EXPECT_FALSE(lock.is_held_by_current_thread());
  EXPECT_TRUE(cluster.no_keys(*cluster.servers[0]));
  EXPECT_TRUE(cluster.no_keys(*cluster.servers[1]));
  EXPECT_TRUE(cluster.no_keys(*cluster.servers[2]));

  // Spin and fenced members too, with a Guard.
  auto spin = cluster.clients[0]->spin_lock(unique_name("ml-s:"));
  auto fenced = cluster.clients[1]->fenced_lock(unique_name("ml-f:"));
  redisync::MultiLock other{spin, fenced};
  {
    redisync::Guard guard(other);
    EXPECT_TRUE(spin.is_held_by_current_thread());
    EXPECT_TRUE(fenced.is_held_by_current_thread());
  }
  EXPECT_FALSE(spin.is_locked());
  EXPECT_FALSE(fenced.is_locked());
}

TEST(MultiLockTest, FailedAttemptLeavesNothingBehind) {
  Cluster cluster(3);
  const std::string name = unique_name("ml:");
  // The last member is held by another Client on the same server.
  redisync::Client other(config_for(*cluster.servers[2]));
  auto held = other.lock(name);
  ASSERT_TRUE(held.try_lock());

  redisync::MultiLock lock(cluster.locks(name));
  EXPECT_FALSE(lock.try_lock());
  const auto report = lock.last_attempt();
  ASSERT_EQ(report.members.size(), 3u);
  EXPECT_FALSE(report.acquired);
  EXPECT_EQ(report.members[0].outcome, MemberOutcome::acquired);
  EXPECT_EQ(report.members[1].outcome, MemberOutcome::acquired);
  EXPECT_EQ(report.members[2].outcome, MemberOutcome::held_by_another);
  EXPECT_NE(report.members[0].detail.find("released again"), std::string::npos);
  EXPECT_NE(report.describe().find("held by another"), std::string::npos) << report.describe();
  // Released on the servers it had taken; the other holder keeps its lock.
  EXPECT_TRUE(cluster.no_keys(*cluster.servers[0]));
  EXPECT_TRUE(cluster.no_keys(*cluster.servers[1]));
  EXPECT_EQ(cluster.servers[2]
                ->command({"HGET", name, held.owner_field(redisync::Client::current_thread_id())})
                .as_string(),
            "1");

  // A timed try gives up after the wait, again leaving nothing behind.
  EXPECT_FALSE(lock.try_lock_for(300ms));
  EXPECT_GE(lock.last_attempt().passes, 1);
  EXPECT_TRUE(cluster.no_keys(*cluster.servers[0]));
  EXPECT_TRUE(cluster.no_keys(*cluster.servers[1]));
  held.unlock();
}

TEST(MultiLockTest, LeaseSetOnEveryMemberAfterSuccess) {
  Cluster cluster(3);
  const std::string name = unique_name("ml:");
  redisync::MultiLock lock(cluster.locks(name));
  // Members are taken with 2 x wait = 2 s while walking (docs/wire-format.md §6 step 1) and set to exactly
  // the lease on success (step 5): more than 2 s remain on each.
  ASSERT_TRUE(lock.try_lock_for(1s, 8s));
  for (auto& server : cluster.servers) {
    const long long ttl = server->command({"PTTL", name}).as_integer();
    EXPECT_GT(ttl, 2000);
    EXPECT_LE(ttl, 8000);
  }
  const auto report = lock.last_attempt();
  EXPECT_TRUE(report.acquired);
  EXPECT_GT(report.validity.count(), 0);
  EXPECT_LT(report.validity.count(), 8000);
  lock.unlock();
  EXPECT_TRUE(cluster.key_gone_everywhere(name));
}

TEST(MultiLockTest, ReentrantHoldsNeedMatchingUnlocks) {
  Cluster cluster(2);
  const std::string name = unique_name("ml:");
  redisync::MultiLock lock(cluster.locks(name));
  lock.lock();
  lock.lock();
  EXPECT_EQ(lock.release().outcome, redisync::ReleaseOutcome::still_held);
  EXPECT_TRUE(lock.is_held_by_current_thread());
  EXPECT_EQ(lock.release().outcome, redisync::ReleaseOutcome::released);
  EXPECT_FALSE(lock.is_held_by_current_thread());
  EXPECT_THROW(lock.unlock_checked(), redisync::NotOwnerError);
  EXPECT_TRUE(cluster.key_gone_everywhere(name));
}

TEST(MultiLockTest, ReentrantMemberHeldBeforeIsKept) {
  // The caller already holds one member on its own; a failed multi-lock attempt must not
  // drop that hold.
  Cluster cluster(2);
  const std::string name = unique_name("ml:");
  auto first = cluster.clients[0]->lock(name);
  first.lock();
  redisync::Client other(config_for(*cluster.servers[1]));
  auto blocker = other.lock(name);
  std::thread([&] { ASSERT_TRUE(blocker.try_lock()); }).join();

  redisync::MultiLock lock(cluster.locks(name));
  EXPECT_FALSE(lock.try_lock());
  EXPECT_EQ(first.hold_count(), 1);
  first.unlock();
  EXPECT_EQ(cluster.servers[0]->command({"EXISTS", name}).as_integer(), 0);
  EXPECT_TRUE(other.lock(name).force_unlock());
}

TEST(MultiLockTest, AsyncForms) {
  Cluster cluster(2);
  const std::string name = unique_name("ml:");
  redisync::MultiLock lock(cluster.locks(name));
  const auto owner = redisync::Client::new_owner_id();
  auto acquired = lock.async_try_lock(owner, 1000ms, 5000ms, asio::use_future);
  ASSERT_EQ(acquired.wait_for(20s), std::future_status::ready);
  EXPECT_TRUE(acquired.get());
  EXPECT_TRUE(lock.is_held_by_thread(owner));
  // Another owner cannot take it right now.
  const auto other = redisync::Client::new_owner_id();
  auto refused = lock.async_try_lock(other, 0ms, 0ms, asio::use_future);
  ASSERT_EQ(refused.wait_for(20s), std::future_status::ready);
  EXPECT_FALSE(refused.get());
  auto unlocked = lock.async_unlock(owner, asio::use_future);
  ASSERT_EQ(unlocked.wait_for(20s), std::future_status::ready);
  EXPECT_NO_THROW(unlocked.get());
  auto locked = lock.async_lock(other, asio::use_future);
  ASSERT_EQ(locked.wait_for(20s), std::future_status::ready);
  EXPECT_NO_THROW(locked.get());
  auto again = lock.async_unlock(other, asio::use_future);
  ASSERT_EQ(again.wait_for(20s), std::future_status::ready);
  EXPECT_NO_THROW(again.get());
  auto not_owner = lock.async_unlock(other, asio::use_future);
  ASSERT_EQ(not_owner.wait_for(20s), std::future_status::ready);
  EXPECT_THROW(not_owner.get(), redisync::NotOwnerError);
  EXPECT_TRUE(cluster.key_gone_everywhere(name));
}

TEST(MultiLockTest, UnreachableMemberIsNamed) {
  Cluster cluster(3);
  const std::string name = unique_name("ml:");
  redisync::MultiLock lock(cluster.locks(name));
  const std::string dead = lock.members()[1];
  cluster.servers[1]->kill();

  EXPECT_FALSE(lock.try_lock());
  auto report = lock.last_attempt();
  EXPECT_EQ(report.members[0].outcome, MemberOutcome::acquired);
  EXPECT_EQ(report.members[1].outcome, MemberOutcome::unreachable) << report.describe();
  EXPECT_EQ(report.members[2].outcome, MemberOutcome::not_attempted);
  EXPECT_TRUE(cluster.no_keys(*cluster.servers[0]));

  try {
    lock.lock(5s);
    ADD_FAILURE() << "lock() succeeded with a member down";
  } catch (const redisync::MultiLockError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(dead + ": unreachable"), std::string::npos) << what;
    EXPECT_EQ(e.report().failed(), 1);
    EXPECT_EQ(e.code(), redisync::errc::multi_lock_failed);
  }
  EXPECT_TRUE(cluster.no_keys(*cluster.servers[0]));
  EXPECT_TRUE(cluster.no_keys(*cluster.servers[2]));
}

TEST(MultiLockTest, BadInput) {
  EXPECT_THROW(redisync::MultiLock{}, redisync::InvalidArgument);
  EXPECT_THROW(redisync::MultiLock(std::vector<redisync::AnyLock>{}), redisync::InvalidArgument);
  Cluster cluster(1);
  auto l = cluster.clients[0]->lock(unique_name("ml:"));
  EXPECT_THROW(redisync::MultiLock({l}, redisync::MultiLockOptions{.reply_timeout = 0ms}),
               redisync::InvalidArgument);
  redisync::MultiLock lock{l};
  EXPECT_THROW(lock.lock(0ms), redisync::InvalidArgument);
  EXPECT_THROW(lock.try_lock_for(1s, -5ms), redisync::InvalidArgument);
  EXPECT_THROW(lock.unlock_checked(), redisync::NotOwnerError);
  EXPECT_EQ(lock.release().outcome, redisync::ReleaseOutcome::not_held);
  EXPECT_EQ(lock.name(), "multi[" + l.name() + "]");
}

// One way on purpose (the one-machinery issue): a MultiLock member's release is the kind's own
// release, whose release record (docs/wire-format.md §1.8) goes to the batching sweeper like every other
// release's; members of plain Locks used to send one DEL per member at once.
TEST(MultiLockTest, MembersReleaseRecordsAreDeletedInBatches) {
  RedisServer server;
  redisync::Client client(config_for(server));
  constexpr int kMembers = 8;
  std::vector<redisync::AnyLock> members;
  const std::string prefix = unique_name("batch:");
  for (int i = 0; i < kMembers; ++i) {
    members.emplace_back(client.lock(prefix + std::to_string(i)));
  }
  redisync::MultiLock all(members);
  all.lock();
  const long long dels_before = redisync::test::command_calls(server, "del");
  all.unlock();
  ASSERT_TRUE(wait_until(
      [&] { return server.command({"KEYS", "redisson_unlock_latch:*"}).elements.empty(); }, 5s));
  // Each release script's own DEL of its lock key counts too: kMembers of those, plus one
  // batch DEL of the records (two if the replies straddled the sweeper's delay).
  EXPECT_LE(redisync::test::command_calls(server, "del") - dels_before, kMembers + 2);
  EXPECT_EQ(server.command({"DBSIZE"}).as_integer(), 0);
}
