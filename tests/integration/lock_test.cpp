// SPDX-License-Identifier: Apache-2.0
// redisync::Lock against a real redis-server: exclusion, reentrancy, leases, watchdog,
// lost-lock detection, push wake-ups, subscriptions, std guards, async forms.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/use_future.hpp>
#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/server_stats.h"
#include "support/test_util.h"
#include "support/worker.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::config_for;
using redisync::test::evalsha_calls;
using redisync::test::no_channels;
using redisync::test::spawn_worker;
using redisync::test::unique_name;
using redisync::test::wait_until;

TEST(LockTest, ExclusionAcrossThreads) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto lock = client.lock(unique_name("lock:"));
  std::vector<std::jthread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        std::unique_lock guard(lock);
        auto v = client.execute({"GET", "counter"});
        const long long n = v.is_nil() ? 0 : std::stoll(v.str);
        client.execute({"SET", "counter", std::to_string(n + 1)});
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(server.command({"GET", "counter"}).as_string(), "800");
  EXPECT_FALSE(lock.is_locked());
}

TEST(LockTest, ExclusionAcrossSixteenProcesses) {
  RedisServer server;
  const std::string name = unique_name("lock:");
  std::vector<pid_t> pids;
  const int iterations = redisync::test::load_count(200);
  for (int p = 0; p < 16; ++p) {
    pids.push_back(
        spawn_worker({"counter", server.url(), name, "counter", std::to_string(iterations)}));
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_TRUE(redisync::test::detail::reap_within(pid, 120s, &status));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  EXPECT_EQ(server.command({"GET", "counter"}).as_string(), std::to_string(16 * iterations));
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
}

TEST(LockTest, ReentrancyAndHoldCounts) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto lock = client.lock(unique_name("lock:"));
  EXPECT_EQ(lock.hold_count(), 0);
  EXPECT_FALSE(lock.is_locked());
  lock.lock();
  lock.lock();
  EXPECT_TRUE(lock.try_lock());
  EXPECT_EQ(lock.hold_count(), 3);
  EXPECT_TRUE(lock.is_held_by_current_thread());
  // The Redis layout is Redisson's: hash field "<uuid>:<thread id>" -> count.
  const std::string field = client.id() + ":" + std::to_string(redisync::Client::current_thread_id());
  EXPECT_EQ(server.command({"HGET", lock.name(), field}).as_string(), "3");
  EXPECT_EQ(lock.release().outcome, redisync::ReleaseOutcome::still_held);
  lock.unlock();
  EXPECT_EQ(lock.hold_count(), 1);
  EXPECT_EQ(lock.release().outcome, redisync::ReleaseOutcome::released);
  EXPECT_FALSE(lock.is_locked());
  EXPECT_EQ(lock.remaining_lease(), redisync::Duration{-2});
}

TEST(LockTest, LeaseExpiryHandsTheLockToAWaiter) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const auto name = unique_name("lock:");
  a.lock(name).lock(400ms);  // never released
  auto lb = b.lock(name);
  EXPECT_FALSE(lb.try_lock());
  EXPECT_TRUE(lb.try_lock_for(5s));
  EXPECT_TRUE(lb.is_held_by_current_thread());
  lb.unlock();
}

TEST(LockTest, ExplicitLeaseIsSetAndReentryRefreshesIt) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto lock = client.lock(unique_name("lock:"));
  ASSERT_TRUE(lock.try_lock_for(0ms, 5s));
  const auto lease = lock.remaining_lease();
  EXPECT_GT(lease, 4s);
  EXPECT_LE(lease, 5s);
  lock.unlock();
  EXPECT_THROW(lock.lock(0ms), redisync::InvalidArgument);
  EXPECT_THROW(lock.try_lock_for(1s, -1ms), redisync::InvalidArgument);
}

TEST(LockTest, KilledHolderFreesWithinWatchdogTimeout) {
  RedisServer server;
  const auto name = unique_name("lock:");
  int out = -1;
  const pid_t pid = spawn_worker({"hold", server.url(), name, "1000"}, &out);
  char buf[8] = {};
  ASSERT_GT(read(out, buf, 5), 0);  // "held"
  close(out);
  redisync::Client client(config_for(server));
  auto lock = client.lock(name);
  EXPECT_FALSE(lock.try_lock());
  ::kill(pid, SIGKILL);
  int status;
  redisync::test::detail::reap_within(pid, 5s, &status);
  EXPECT_TRUE(lock.try_lock_for(5s));  // the lease (1 s) runs out; the waiter takes it
  lock.unlock();
}

TEST(LockTest, WatchdogKeepsTheLockForThreeLeases) {
  RedisServer server;
  auto cfg = config_for(server);
  cfg.lock_watchdog_timeout = 600ms;
  redisync::Client client(cfg), other(config_for(server));
  auto lock = client.lock(unique_name("lock:"));
  lock.lock();
  std::this_thread::sleep_for(1800ms);
  EXPECT_TRUE(lock.is_held_by_current_thread());
  EXPECT_FALSE(other.lock(lock.name()).try_lock());
  EXPECT_GT(lock.remaining_lease(), 0ms);
  lock.unlock();
}

TEST(LockTest, LostLockIsReportedAfterKeyDeletion) {
  RedisServer server;
  auto cfg = config_for(server);
  cfg.lock_watchdog_timeout = 600ms;
  redisync::Client client(cfg);
  std::atomic<int> lost{0};
  std::string lost_name;
  std::mutex m;
  client.on_lock_lost([&](const redisync::LockLostEvent& e) {
    std::lock_guard g(m);
    lost_name = e.name;
    ++lost;
  });
  auto lock = client.lock(unique_name("lock:"));
  lock.lock();
  server.command({"DEL", lock.name()});
  ASSERT_TRUE(wait_until([&] { return lost.load() == 1; }, 3s));
  {
    std::lock_guard g(m);
    EXPECT_EQ(lost_name, lock.name());
  }
  EXPECT_FALSE(lock.is_held_by_current_thread());
  EXPECT_THROW(lock.unlock_checked(), redisync::LockLostError);
  EXPECT_THROW(lock.unlock_checked(), redisync::NotOwnerError);  // the loss is reported once
}

TEST(LockTest, LostLockIsReportedAfterServerRestartAndNewLockRenews) {
  RedisServer server;
  auto cfg = config_for(server);
  cfg.lock_watchdog_timeout = 900ms;
  cfg.timeout = 300ms;
  redisync::Client client(cfg);
  std::atomic<int> lost{0};
  client.on_lock_lost([&](const redisync::LockLostEvent&) { ++lost; });
  auto lock = client.lock(unique_name("lock:"));
  lock.lock();
  server.restart();  // no persistence: the key is gone
  ASSERT_TRUE(wait_until([&] { return lost.load() == 1; }, 5s));
  EXPECT_THROW(lock.unlock_checked(), redisync::LockLostError);
  lock.lock();  // a new hold of the same name is renewed normally
  std::this_thread::sleep_for(2000ms);
  EXPECT_TRUE(lock.is_held_by_current_thread());
  EXPECT_EQ(lost.load(), 1);
  lock.unlock();
}

TEST(LockTest, ForceUnlockWakesWaiter) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const auto name = unique_name("lock:");
  a.lock(name).lock(60s);
  auto waiter = std::async(std::launch::async, [&] { return b.lock(name).try_lock_for(20s) ? 1 : 0; });
  ASSERT_TRUE(wait_until([&] { return !no_channels(server); }, 3s));
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(a.lock(name).force_unlock());
  ASSERT_EQ(waiter.wait_for(5s), std::future_status::ready);  // woken, not after 60 s
  EXPECT_EQ(waiter.get(), 1);
}

TEST(LockTest, WaiterWakesOnReleaseWithFewAttempts) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const auto name = unique_name("lock:");
  auto la = a.lock(name);
  la.lock(60s);
  std::promise<void> acquired, counted;
  std::jthread waiter([&, counted_future = counted.get_future()] {
    auto lb = b.lock(name);
    if (lb.try_lock_for(20s)) {
      acquired.set_value();
      counted_future.wait_for(10s);  // its own release is not one of the counted calls
      lb.unlock();
    }
  });
  ASSERT_TRUE(wait_until([&] { return !no_channels(server); }, 3s));
  std::this_thread::sleep_for(200ms);  // the waiter is asleep now
  const long long before = evalsha_calls(server);
  la.unlock();
  auto f = acquired.get_future();
  const bool woken = f.wait_for(5s) == std::future_status::ready;
  const long long calls = evalsha_calls(server) - before;
  counted.set_value();
  ASSERT_TRUE(woken);
  // The release itself plus at most 3 acquire attempts by the waiter.
  EXPECT_LE(calls, 1 + 3);
  waiter.join();
}

// A waiter whose channel is still subscribed (lingering after an earlier wait) joins it before
// its first attempt: a failed attempt goes straight to sleep instead of asking twice, and the
// release still wakes it.
TEST(LockTest, WaiterOnALingeringChannelAttemptsOnceAndIsStillWoken) {
  RedisServer server;
  auto cfg = config_for(server);
  cfg.subscription_linger = 10s;
  cfg.starvation_guard = redisync::Duration{0};  // no claimant re-polls in the counts
  redisync::Client a(cfg), b(cfg);
  const auto name = unique_name("lock:");
  auto la = a.lock(name);
  la.lock(60s);
  auto lb = b.lock(name);
  EXPECT_FALSE(lb.try_lock_for(200ms));  // subscribes; the channel lingers afterwards
  ASSERT_FALSE(no_channels(server));
  const long long before = evalsha_calls(server);
  EXPECT_FALSE(lb.try_lock_for(200ms));
  // The first attempt, then the one when the wait ran out; no attempt after subscribing.
  EXPECT_EQ(evalsha_calls(server) - before, 2);

  std::promise<void> acquired;
  const long long asleep_from = evalsha_calls(server);  // before the waiter's first attempt
  std::jthread waiter([&] {
    if (lb.try_lock_for(20s)) {
      acquired.set_value();
      lb.unlock();
    }
  });
  ASSERT_TRUE(wait_until([&] { return evalsha_calls(server) > asleep_from; }, 3s));
  std::this_thread::sleep_for(100ms);  // the waiter has had its attempt's reply: asleep now
  la.unlock();
  auto f = acquired.get_future();
  ASSERT_EQ(f.wait_for(5s), std::future_status::ready);
  waiter.join();
}

TEST(LockTest, ReleaseWakesOneLocalWaiterAtATime) {
  RedisServer server;
  redisync::Client holder(config_for(server)), waiters(config_for(server));
  const auto name = unique_name("lock:");
  holder.lock(name).lock(60s);
  std::atomic<int> got{0};
  std::vector<std::jthread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      auto l = waiters.lock(name);
      if (l.try_lock_for(20s)) {
        ++got;
        std::this_thread::sleep_for(20ms);
        l.unlock();
      }
    });
  }
  ASSERT_TRUE(wait_until([&] { return !no_channels(server); }, 3s));
  std::this_thread::sleep_for(200ms);
  holder.lock(name).force_unlock();
  for (auto& t : threads) t.join();
  EXPECT_EQ(got.load(), 4);
}

TEST(LockTest, ChannelsAreUnsubscribedAfterManyCycles) {
  RedisServer server;
  redisync::Client client(config_for(server));
  std::vector<redisync::Lock> locks;
  for (int i = 0; i < 5; ++i) locks.push_back(client.lock(unique_name("lock:")));
  std::atomic<int> cycles{0};
  std::vector<std::jthread> threads;
  const int total = redisync::test::load_count(10000);
  for (int t = 0; t < 32; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < total / 32 + 1; ++i) {
        auto& l = locks[static_cast<std::size_t>((t + i) % 5)];
        l.lock();
        l.unlock();
        ++cycles;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_GE(cycles.load(), total);
  EXPECT_TRUE(wait_until([&] { return no_channels(server); }, 3s));
  for (auto& l : locks) EXPECT_FALSE(l.is_locked());
}

TEST(LockTest, WaiterIsWokenAfterResubscribe) {
  // A release that happens while the subscription is down is never heard; after the
  // resubscription every waiter re-checks instead of sleeping out the holder's lease.
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const auto name = unique_name("lock:");
  a.lock(name).lock(60s);
  auto waiter =
      std::async(std::launch::async, [&] { return b.lock(name).try_lock_for(30s) ? 1 : 0; });
  ASSERT_TRUE(wait_until([&] { return !no_channels(server); }, 3s));
  std::this_thread::sleep_for(100ms);
  server.command({"DEL", name});                         // freed silently: no message
  server.command({"CLIENT", "KILL", "TYPE", "pubsub"});  // the waiter's subscription drops
  ASSERT_EQ(waiter.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(waiter.get(), 1);
}

TEST(LockTest, ManyWaitersAreAllWokenWhenTheirSubscriptionDropsAndReturns) {
  // Issue 34: a reconnection re-subscribes every channel of the Client's waiters. Half of the
  // locks are released right after the pub/sub connection is killed (their messages are lost:
  // the waiters must re-check once resubscribed), the other half once every channel is back.
  // The holder's lease (60 s) is longer than the waits (30 s): a waiter that missed its
  // wake-up would time out instead of acquiring.
  constexpr int kLocks = 500;
  RedisServer server;
  redisync::Client holder(config_for(server)), waiters(config_for(server));
  const auto prefix = unique_name("resub:");
  std::vector<redisync::Lock> held;  // by this thread
  for (int i = 0; i < kLocks; ++i) {
    held.push_back(holder.lock(prefix + std::to_string(i)));
    held.back().lock(60s);
  }
  std::atomic<int> acquired{0}, failed{0};
  for (int i = 0; i < kLocks; ++i) {
    auto lock = waiters.lock(prefix + std::to_string(i));
    const auto owner = redisync::Client::new_owner_id();
    lock.async_try_lock(owner, 30s, 10s, [&, lock, owner](std::exception_ptr e, bool ok) mutable {
      if (e || !ok) {
        ++failed;
        return;
      }
      ++acquired;
      lock.async_unlock(owner, [](std::exception_ptr) {});
    });
  }
  const auto channels = [&] {
    return server.command({"PUBSUB", "CHANNELS", "*" + prefix + "*"}).elements.size();
  };
  ASSERT_TRUE(wait_until([&] { return channels() == kLocks; }, 20s)) << channels();
  EXPECT_EQ(server.command({"CLIENT", "KILL", "TYPE", "pubsub"}).integer, 1);
  for (int i = 0; i < kLocks / 2; ++i) held[static_cast<std::size_t>(i)].unlock();
  ASSERT_TRUE(wait_until([&] { return acquired.load() + failed.load() >= kLocks / 2; }, 25s))
      << acquired.load() << " acquired, " << failed.load() << " failed";
  ASSERT_TRUE(wait_until([&] { return channels() == kLocks / 2; }, 20s)) << channels();
  for (int i = kLocks / 2; i < kLocks; ++i) held[static_cast<std::size_t>(i)].unlock();
  EXPECT_TRUE(wait_until([&] { return acquired.load() + failed.load() == kLocks; }, 25s));
  EXPECT_EQ(acquired.load(), kLocks);
  EXPECT_EQ(failed.load(), 0);
  EXPECT_TRUE(wait_until([&] { return no_channels(server); }, 5s));
}

TEST(LockTest, ScopedLockOfTwoLocksInOppositeOrders) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto x = client.lock(unique_name("x:"));
  auto y = client.lock(unique_name("y:"));
  std::atomic<int> rounds{0};
  std::jthread t1([&] {
    for (int i = 0; i < 50; ++i) {
      std::scoped_lock both(x, y);
      ++rounds;
    }
  });
  std::jthread t2([&] {
    for (int i = 0; i < 50; ++i) {
      std::scoped_lock both(y, x);
      ++rounds;
    }
  });
  t1.join();
  t2.join();
  EXPECT_EQ(rounds.load(), 100);
  EXPECT_FALSE(x.is_locked());
  EXPECT_FALSE(y.is_locked());
}

TEST(LockTest, AsyncFormsWithCallbackFutureAndCoroutine) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto lock = client.lock(unique_name("lock:"));
  const auto owner = redisync::Client::new_owner_id();

  std::promise<void> locked;
  lock.async_lock(owner, [&](std::exception_ptr e) {
    if (e) {
      locked.set_exception(e);
    } else {
      locked.set_value();
    }
  });
  locked.get_future().get();
  EXPECT_TRUE(lock.is_held_by_thread(owner));
  EXPECT_FALSE(lock.is_held_by_current_thread());

  auto other = redisync::Client::new_owner_id();
  auto f = lock.async_try_lock(other, 0ms, 0ms, asio::use_future);
  EXPECT_FALSE(f.get());
  lock.async_unlock(owner, asio::use_future).get();
  EXPECT_FALSE(lock.is_locked());

  asio::io_context io;
  bool ok = false;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await lock.async_lock(other, 5s, asio::use_awaitable);
        ok = co_await lock.async_try_lock(other, 0ms, 0ms, asio::use_awaitable);  // re-entry
        co_await lock.async_unlock(other, asio::use_awaitable);
        co_await lock.async_unlock(other, asio::use_awaitable);
      },
      asio::detached);
  io.run();
  EXPECT_TRUE(ok);
  EXPECT_FALSE(lock.is_locked());
  EXPECT_THROW(lock.async_unlock(other, asio::use_future).get(), redisync::NotOwnerError);
}

TEST(LockTest, WrongTypeKeyIsAClearError) {
  RedisServer server;
  redisync::Client client(config_for(server));
  server.command({"SET", "plain-string", "x"});
  auto lock = client.lock("plain-string");
  try {
    lock.lock();
    FAIL() << "expected ServerError";
  } catch (const redisync::ServerError& e) {
    EXPECT_NE(std::string(e.what()).find("plain-string"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("WRONGTYPE"), std::string::npos) << e.what();
  }
  EXPECT_THROW(client.lock(""), redisync::InvalidArgument);
}

TEST(LockTest, NamesWithBracesSpacesAndBinaryBytes) {
  RedisServer server;
  redisync::Client client(config_for(server));
  for (std::string name : {std::string("{tagged}:x"), std::string("with space"),
                           std::string("bin\x01\x02\xff", 6), std::string(100000, 'n')}) {
    auto lock = client.lock(name);
    lock.lock();
    EXPECT_TRUE(lock.is_locked());
    lock.unlock();
    EXPECT_FALSE(lock.is_locked());
  }
}

TEST(LockTest, GuardNeverThrowsWhenTheLockWasLost) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto lock = client.lock(unique_name("lock:"));
  {
    redisync::Guard guard(lock);
    EXPECT_TRUE(lock.is_held_by_current_thread());
    server.command({"DEL", lock.name()});  // lost behind the holder's back
  }  // the destructor reports instead of throwing (std::lock_guard would terminate here)
  EXPECT_FALSE(lock.is_locked());
  {
    redisync::Guard guard(lock);
    EXPECT_EQ(guard.release().outcome, redisync::ReleaseOutcome::released);
    EXPECT_EQ(guard.release().outcome, redisync::ReleaseOutcome::not_held);
  }
  EXPECT_FALSE(lock.is_locked());
}

TEST(LockTest, WaiterFailsWithClientClosedWhenItsClientIsDestroyed) {
  RedisServer server;
  redisync::Client holder(config_for(server));
  const auto name = unique_name("lock:");
  holder.lock(name).lock(60s);
  auto client = std::make_unique<redisync::Client>(config_for(server));
  auto lock = client->lock(name);
  auto waiter = std::async(std::launch::async, [&] {
    try {
      lock.lock();
      return std::string("acquired");
    } catch (const redisync::ClientClosedError&) {
      return std::string("closed");
    } catch (const std::exception& e) {
      return std::string("other: ") + e.what();
    }
  });
  ASSERT_TRUE(wait_until([&] { return !no_channels(server); }, 3s));
  std::this_thread::sleep_for(100ms);
  client.reset();
  ASSERT_EQ(waiter.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(waiter.get(), "closed");
}

// Release records (docs/wire-format.md §1.8) are swept in batches after their releases complete: none is
// left behind, and far fewer DEL commands than releases are sent.
TEST(LockTest, ReleaseRecordsAreDeletedInBatches) {
  RedisServer server;
  redisync::Client client(config_for(server));
  const std::string prefix = unique_name("records:");
  constexpr int kLocks = 200;
  std::vector<std::future<void>> done;
  std::vector<redisync::Lock> locks;
  for (int i = 0; i < kLocks; ++i) locks.push_back(client.lock(prefix + std::to_string(i)));
  server.command({"CONFIG", "RESETSTAT"});
  for (int i = 0; i < kLocks; ++i) {
    const auto owner = redisync::Client::new_owner_id();
    locks[static_cast<std::size_t>(i)].async_lock(owner, 10s, asio::use_future).get();
    done.push_back(locks[static_cast<std::size_t>(i)].async_unlock(owner, asio::use_future));
  }
  for (auto& f : done) f.get();
  EXPECT_TRUE(wait_until(
      [&] {
        return server.command({"KEYS", "redisson_unlock_latch:*"}).elements.empty();
      },
      5s))
      << server.command({"KEYS", "redisson_unlock_latch:*"}).elements.size() << " records left";
  const std::string stats = server.command({"INFO", "commandstats"}).as_string();
  // DEL calls counted by the server include the DEL of each lock key inside the release script.
  const auto pos = stats.find("cmdstat_del:calls=");
  ASSERT_NE(pos, std::string::npos);
  const long long dels = std::stoll(stats.substr(pos + 18));
  EXPECT_GE(dels, kLocks);
  EXPECT_LT(dels, 2 * kLocks) << "one DEL per release record was sent";
}
