// SPDX-License-Identifier: Apache-2.0
// redisync::ReadWriteLock against a real redis-server: Redisson's layout (§5), shared and
// exclusive holds, per-hold lease markers, wake-ups, downgrade, the upgrade error, watchdog
// renewal of both sides, exclusion across processes.
#include <gtest/gtest.h>

#include <asio/use_future.hpp>
#include <atomic>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "lock_kinds_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;
using namespace redisync::test::kinds;

namespace {

std::string marker(const std::string& name, const std::string& field, int k) {
  return "{" + name + "}:" + field + ":rwlock_timeout:" + std::to_string(k);
}

bool exists(RedisServer& server, const std::string& key) {
  return server.command({"EXISTS", key}).as_integer() == 1;
}

std::string thread_field(redisync::Client& client) {
  return client.id() + ":" + std::to_string(redisync::Client::current_thread_id());
}

}  // namespace

TEST(ReadWriteLockTest, LayoutOfReadAndWriteHolds) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto rw = client.read_write_lock(unique_name("rw:"));
  const auto& name = rw.name();
  const std::string field = thread_field(client);

  rw.lock();
  EXPECT_EQ(server.command({"HGET", name, "mode"}).as_string(), "write");
  EXPECT_EQ(server.command({"HGET", name, field + ":write"}).as_string(), "1");
  EXPECT_TRUE(rw.write_lock().is_locked());
  EXPECT_FALSE(rw.read_lock().is_locked());
  EXPECT_EQ(rw.write_lock().owner_field(redisync::Client::current_thread_id()), field + ":write");
  rw.unlock();
  EXPECT_FALSE(exists(server, name));

  rw.lock_shared();
  rw.lock_shared(20s);
  EXPECT_EQ(server.command({"HGET", name, "mode"}).as_string(), "read");
  EXPECT_EQ(server.command({"HGET", name, field}).as_string(), "2");
  EXPECT_EQ(rw.read_lock().hold_count(), 2);
  EXPECT_GT(server.command({"PTTL", marker(name, field, 1)}).as_integer(), 0);
  EXPECT_GT(server.command({"PTTL", marker(name, field, 2)}).as_integer(), 19000);
  EXPECT_GT(rw.read_lock().remaining_lease(), 19s);  // max(lease of every hold)
  EXPECT_TRUE(rw.read_lock().is_locked());
  EXPECT_FALSE(rw.write_lock().is_locked());
  EXPECT_EQ(rw.read_lock().release().outcome, redisync::ReleaseOutcome::still_held);
  EXPECT_FALSE(exists(server, marker(name, field, 2)));
  rw.unlock_shared();
  EXPECT_FALSE(exists(server, name));
  EXPECT_FALSE(exists(server, marker(name, field, 1)));
  EXPECT_THROW(rw.unlock_shared_checked(), redisync::NotOwnerError);
  EXPECT_THROW(rw.unlock_checked(), redisync::NotOwnerError);
}

TEST(ReadWriteLockTest, ManyReadersHoldItAtOnce) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto rw = client.read_write_lock(unique_name("rw:"));
  std::atomic<int> inside{0};
  std::atomic<int> saw_all{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      std::shared_lock guard(rw);
      ++inside;
      if (wait_until([&] { return inside.load() == 8; }, 10s)) ++saw_all;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(saw_all.load(), 8);
  EXPECT_FALSE(rw.read_lock().is_locked());
}

TEST(ReadWriteLockTest, WriterWaitsUntilTheLastReaderLeaves) {
  RedisServer server;
  redisync::Client readers(config_for(server)), writers(config_for(server));
  const auto name = unique_name("rw:");
  auto read = readers.read_write_lock(name).read_lock();
  std::vector<std::int64_t> owners;
  for (int i = 0; i < 3; ++i) {
    owners.push_back(redisync::Client::new_owner_id());
    read.async_lock(owners.back(), asio::use_future).get();
  }
  std::atomic<bool> written{false};
  auto writer = std::async(std::launch::async, [&] {
    auto rw = writers.read_write_lock(name);
    if (!rw.try_lock_for(30s)) return false;
    written = true;
    rw.unlock();
    return true;
  });
  ASSERT_TRUE(wait_until(
      [&] {
        return !server.command({"PUBSUB", "CHANNELS"}).elements.empty();
      },
      3s));
  for (std::size_t i = 0; i + 1 < owners.size(); ++i) {
    read.async_unlock(owners[i], asio::use_future).get();
    std::this_thread::sleep_for(200ms);
    EXPECT_FALSE(written.load()) << "writer got in with " << owners.size() - i - 1
                                 << " readers left";
  }
  read.async_unlock(owners.back(), asio::use_future).get();  // publishes: wakes the writer
  ASSERT_EQ(writer.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(writer.get());
}

TEST(ReadWriteLockTest, TheLongerReaderLeaseKeepsTheLock) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server)), w(config_for(server));
  const auto name = unique_name("rw:");
  auto ra = a.read_write_lock(name);
  auto rb = b.read_write_lock(name);
  ra.lock_shared(3s);
  rb.lock_shared(10s);
  const std::string a_marker = marker(name, thread_field(a), 1);
  ASSERT_TRUE(exists(server, a_marker));
  // a's hold expires with its marker; the lock lives on for b's 10 s.
  ASSERT_TRUE(wait_until([&] { return !exists(server, a_marker); }, 6s));
  EXPECT_GT(server.command({"PTTL", name}).as_integer(), 3000);
  EXPECT_FALSE(w.read_write_lock(name).try_lock());
  // a's release drops its field and sets the lock's expiry to the longest live marker (b's).
  // a's own hold had ended with its marker (its local lease deadline told it so): the
  // release reports it lost, never "released".
  EXPECT_EQ(ra.read_lock().release().outcome, redisync::ReleaseOutcome::lost);
  const long long pttl = server.command({"PTTL", name}).as_integer();
  EXPECT_GT(pttl, 3000);
  EXPECT_LE(pttl, 10000);
  EXPECT_EQ(server.command({"HGET", name, "mode"}).as_string(), "read");
  EXPECT_FALSE(w.read_write_lock(name).try_lock());
  rb.unlock_shared();
  EXPECT_FALSE(exists(server, name));
}

TEST(ReadWriteLockTest, TwentyBlockedReadersAllWakeOnOneWriteRelease) {
  RedisServer server;
  redisync::Client writer(config_for(server)), readers(config_for(server));
  const auto name = unique_name("rw:");
  auto rw = writer.read_write_lock(name);
  rw.lock(60s);  // only the release can let the readers in within the test's bound
  std::vector<std::promise<void>> acquired(20);
  std::vector<std::future<void>> got;
  for (auto& p : acquired) got.push_back(p.get_future());
  std::atomic<int> inside{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 20; ++i) {
    threads.emplace_back([&, i] {
      auto r = readers.read_write_lock(name);
      if (!r.try_lock_shared_for(30s)) return;
      ++inside;
      acquired[static_cast<std::size_t>(i)].set_value();
      wait_until([&] { return inside.load() == 20; }, 10s);  // all read together
      r.unlock_shared();
    });
  }
  ASSERT_TRUE(wait_until(
      [&] {
        return !server.command({"PUBSUB", "CHANNELS"}).elements.empty();
      },
      3s));
  std::this_thread::sleep_for(300ms);  // the readers are asleep now
  rw.unlock();                         // publishes "1": every waiter retries
  for (auto& f : got) EXPECT_EQ(f.wait_for(10s), std::future_status::ready);
  for (auto& t : threads) t.join();
  EXPECT_EQ(inside.load(), 20);
  EXPECT_FALSE(exists(server, name));
}

TEST(ReadWriteLockTest, WriterMayDowngradeToReader) {
  RedisServer server;
  redisync::Client client(config_for(server)), other(config_for(server));
  const auto name = unique_name("rw:");
  auto rw = client.read_write_lock(name);
  rw.lock();
  rw.lock_shared();                                             // the writer may also read
  EXPECT_FALSE(other.read_write_lock(name).try_lock_shared());  // others may not yet
  rw.unlock();  // downgrade: still reading, the lock is now in read mode
  EXPECT_EQ(server.command({"HGET", name, "mode"}).as_string(), "read");
  EXPECT_EQ(rw.read_lock().hold_count(), 1);
  auto o = other.read_write_lock(name);
  EXPECT_TRUE(o.try_lock_shared());
  o.unlock_shared();
  EXPECT_FALSE(o.try_lock());  // a writer from elsewhere still waits for the reader
  rw.unlock_shared();
  EXPECT_FALSE(exists(server, name));
}

TEST(ReadWriteLockTest, ReaderAskingForTheWriteLockGetsUpgradeError) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto rw = client.read_write_lock(unique_name("rw:"));
  rw.lock_shared();
  try {
    rw.lock();
    FAIL() << "expected UpgradeError";
  } catch (const redisync::UpgradeError& e) {
    EXPECT_EQ(e.value(), redisync::errc::upgrade_would_deadlock);
    EXPECT_NE(std::string(e.what()).find(rw.name()), std::string::npos) << e.what();
  }
  EXPECT_THROW(rw.try_lock(), redisync::UpgradeError);
  EXPECT_THROW(rw.try_lock_for(5s), redisync::UpgradeError);
  EXPECT_THROW(std::unique_lock guard(rw), redisync::UpgradeError);
  // Nothing changed: still one read hold, no write hold.
  EXPECT_EQ(rw.read_lock().hold_count(), 1);
  EXPECT_EQ(rw.write_lock().hold_count(), 0);
  rw.unlock_shared();
  EXPECT_TRUE(rw.try_lock());  // without the read hold the write lock is free
  rw.unlock();
}

TEST(ReadWriteLockTest, CrashedReaderExpiresWhileALiveReaderIsRenewed) {
  RedisServer server;
  auto cfg = config_for(server);
  cfg.lock_watchdog_timeout = 600ms;
  redisync::Client client(cfg), writer(config_for(server));
  const auto name = unique_name("rw:");
  int out = -1;
  const pid_t pid = spawn_worker({"rw-read-hold", server.url(), name, "1000"}, &out);
  ASSERT_TRUE(read_word(out, "held"));
  close(out);
  auto rw = client.read_write_lock(name);
  rw.lock_shared();  // watchdog mode: renewed every 200 ms
  const auto acquired = std::chrono::steady_clock::now();
  const std::string mine = thread_field(client);
  std::string dead;
  for (const auto& f : server.command({"HKEYS", name}).elements) {
    if (f.as_string() != "mode" && f.as_string() != mine) dead = f.as_string();
  }
  ASSERT_FALSE(dead.empty());
  kill_worker(pid);
  // The dead reader's marker is no longer renewed and expires after its 1 s lease...
  ASSERT_TRUE(wait_until([&] { return !exists(server, marker(name, dead, 1)); }, 5s));
  // ...while the live reader is renewed for three of its leases and more.
  std::this_thread::sleep_until(acquired + 3 * 600ms + 200ms);
  EXPECT_TRUE(rw.read_lock().is_held_by_current_thread());
  EXPECT_TRUE(exists(server, marker(name, mine, 1)));
  EXPECT_GT(server.command({"PTTL", name}).as_integer(), 0);
  EXPECT_FALSE(writer.read_write_lock(name).try_lock());
  // The last live reader leaves: the dead reader's field does not keep the lock.
  EXPECT_EQ(rw.read_lock().release().outcome, redisync::ReleaseOutcome::released);
  EXPECT_FALSE(exists(server, name));
  auto w = writer.read_write_lock(name);
  EXPECT_TRUE(w.try_lock());
  w.unlock();
}

TEST(ReadWriteLockTest, WatchdogRenewsTheWriteLockAndReportsItsLoss) {
  RedisServer server;
  auto cfg = config_for(server);
  cfg.lock_watchdog_timeout = 600ms;
  redisync::Client client(cfg), other(config_for(server));
  std::mutex m;
  std::vector<std::string> lost;
  client.on_lock_lost([&](const redisync::LockLostEvent& e) {
    std::lock_guard g(m);
    lost.push_back(e.name);
  });
  auto rw = client.read_write_lock(unique_name("rw:"));
  rw.lock();
  rw.lock_shared();
  std::this_thread::sleep_for(1800ms);
  EXPECT_TRUE(rw.write_lock().is_held_by_current_thread());
  EXPECT_TRUE(rw.read_lock().is_held_by_current_thread());
  EXPECT_FALSE(other.read_write_lock(rw.name()).try_lock_shared());
  server.command({"DEL", rw.name()});
  ASSERT_TRUE(wait_until(
      [&] {
        std::lock_guard g(m);
        return lost.size() == 2;
      },
      3s));
  {
    std::lock_guard g(m);
    std::sort(lost.begin(), lost.end());
    EXPECT_EQ(lost,
              (std::vector<std::string>{rw.name() + " (read lock)", rw.name() + " (write lock)"}));
  }
  EXPECT_THROW(rw.unlock_checked(), redisync::LockLostError);
  EXPECT_THROW(rw.unlock_shared_checked(), redisync::LockLostError);
}

TEST(ReadWriteLockTest, ForceUnlockOfEachSide) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const auto name = unique_name("rw:");
  auto rw = a.read_write_lock(name);
  rw.lock_shared();
  EXPECT_FALSE(b.read_write_lock(name).write_lock().force_unlock());  // not in write mode
  EXPECT_TRUE(b.read_write_lock(name).read_lock().force_unlock());
  EXPECT_FALSE(exists(server, name));
  // The holder finds out at its release: it held the lock, and it is gone.
  EXPECT_THROW(rw.unlock_shared_checked(), redisync::LockLostError);
  rw.lock();
  EXPECT_TRUE(b.read_write_lock(name).write_lock().force_unlock());
  EXPECT_THROW(rw.unlock_checked(), redisync::LockLostError);
  EXPECT_THROW(rw.unlock_checked(), redisync::NotOwnerError);  // reported once
  rw.lock();
  EXPECT_TRUE(rw.write_lock().force_unlock());  // the holder's own force release forgets it
  EXPECT_THROW(rw.unlock_checked(), redisync::NotOwnerError);
}

TEST(ReadWriteLockTest, ExclusionAcrossEightProcesses) {
  RedisServer server;
  expect_exclusion_across_processes(server, "rw", 8, 50);
}
