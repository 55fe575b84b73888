// SPDX-License-Identifier: Apache-2.0
// Issue 22 item 6: numbers outside what the library can represent or the server's Lua can
// compare exactly are refused before anything is written; waits too long for the clock wait
// without limit; counts read from the server are parsed strictly.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <limits>
#include <string>

#include "lock_kinds_util.h"
#include "support/expect_error.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using namespace redisync::test::kinds;

namespace {
constexpr std::int64_t kTwoTo53 = std::int64_t{1} << 53;
}

TEST(HonestNumbersTest, TryLockForMillisecondsMaxGivesUpAtOnce) {
  RedisServer server;
  redisync::Client a(config_for(server)), b(config_for(server));
  const std::string name = unique_name("numbers:fair:");
  auto holder = a.fair_lock(name);
  auto waiter = b.fair_lock(name);
  holder.lock();
  auto got = std::async(std::launch::async, [&] {
    const bool ok = waiter.try_lock_for(std::chrono::milliseconds::max());
    if (ok) waiter.unlock();
    return ok;
  });
  ASSERT_EQ(got.wait_for(1s), std::future_status::timeout) << "gave up at once";
  holder.unlock();
  ASSERT_EQ(got.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(got.get());
}

TEST(HonestNumbersTest, SemaphoreTryAcquireForHoursMaxGivesUpAtOnce) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto sem = client.semaphore(unique_name("numbers:sem:"));
  ASSERT_TRUE(sem.try_set_permits(0));
  auto got = std::async(std::launch::async,
                        [&] { return sem.try_acquire_for(std::chrono::hours(2600000)); });
  ASSERT_EQ(got.wait_for(1s), std::future_status::timeout) << "gave up at once";
  sem.release();
  ASSERT_EQ(got.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(got.get());
}

TEST(HonestNumbersTest, SemaphoreAvailablePermitsAcceptsTrailingGarbage) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto sem = client.semaphore(unique_name("numbers:sem:"));
  server.command({"SET", sem.name(), "12abc"});
  EXPECT_THROW(sem.available_permits(), redisync::ServerError);
}

// Issue 23 item 2: the permit-expirable semaphore read its count through Lua's tonumber():
// "12abc" came back as 0 and "1e3" as 1000. Both are now refused, naming the key and value.
TEST(HonestNumbersTest, PermitExpirableAvailablePermitsAcceptsTrailingGarbage) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto pes = client.permit_expirable_semaphore(unique_name("numbers:pes:"));
  for (const std::string bad : {"12abc", "1e3", " 7", ""}) {
    server.command({"SET", pes.name(), bad});
    try {
      const auto got = pes.available_permits();
      ADD_FAILURE() << "'" << bad << "' read as " << got;
    } catch (const redisync::ServerError& e) {
      const std::string text = e.what();
      EXPECT_NE(text.find("'" + pes.name() + "'"), std::string::npos) << text;
      EXPECT_NE(text.find("holds '" + bad + "'"), std::string::npos) << text;
    }
    EXPECT_EQ(server.command({"GET", pes.name()}).as_string(), bad);  // nothing written
  }
  server.command({"SET", pes.name(), "-3"});
  EXPECT_EQ(pes.available_permits(), -3);  // a negative count is a count
}

TEST(HonestNumbersTest, SemaphoreOfTwoTo53PermitsGrantsOneMore) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto sem = client.semaphore(unique_name("numbers:sem:"));
  EXPECT_THROW(sem.try_set_permits(kTwoTo53), redisync::InvalidArgument);
  EXPECT_THROW(sem.release(kTwoTo53), redisync::InvalidArgument);
  EXPECT_EQ(server.command({"EXISTS", sem.name()}).as_integer(), 0);  // nothing written
  ASSERT_TRUE(sem.try_set_permits(kTwoTo53 - 1));
  EXPECT_THROW(sem.release(1), redisync::ServerError);  // the count would leave the range
  EXPECT_EQ(sem.available_permits(), kTwoTo53 - 1);
}

TEST(HonestNumbersTest, PermitExpirableSetPermitsInt64MaxDrivesTheCountNegative) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto pes = client.permit_expirable_semaphore(unique_name("numbers:pes:"));
  ASSERT_TRUE(pes.try_set_permits(2));
  EXPECT_THROW(pes.set_permits(std::numeric_limits<std::int64_t>::max()),
               redisync::InvalidArgument);
  EXPECT_EQ(pes.available_permits(), 2);
  pes.set_permits(3);  // still usable
  EXPECT_EQ(pes.available_permits(), 3);
}

TEST(HonestNumbersTest, PermitExpirableAcquireInt64MaxBuildsIdsUntilMemoryRunsOut) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto pes = client.permit_expirable_semaphore(unique_name("numbers:pes:"));
  ASSERT_TRUE(pes.try_set_permits(1));
  EXPECT_THROW(pes.acquire(std::numeric_limits<std::int64_t>::max(), 10s),
               redisync::InvalidArgument);
  EXPECT_EQ(pes.available_permits(), 1);
}

// MultiLock and RedLock compute their own member waits from the caller's: a wait the clock
// cannot add (milliseconds::max()) must still mean "wait", for both.
TEST(HonestNumbersTest, MultiLockAndRedLockTryLockForMillisecondsMaxWait) {
  // Three servers, a holder's and a waiter's Client on each (RedLock wants one per member).
  std::vector<std::unique_ptr<RedisServer>> servers;
  std::vector<std::unique_ptr<redisync::Client>> holders, waiters;
  for (int i = 0; i < 3; ++i) {
    servers.push_back(std::make_unique<RedisServer>());
    holders.push_back(std::make_unique<redisync::Client>(config_for(*servers.back())));
    waiters.push_back(std::make_unique<redisync::Client>(config_for(*servers.back())));
  }
  for (const bool red : {false, true}) {
    SCOPED_TRACE(red ? "RedLock" : "MultiLock");
    const std::string name = unique_name("numbers:multi:");
    // Held elsewhere on two of the three servers: neither kind can succeed until freed.
    auto holder2 = holders[1]->lock(name);
    auto holder3 = holders[2]->lock(name);
    holder2.lock();
    holder3.lock();
    std::vector<redisync::AnyLock> members;
    for (auto& w : waiters) members.emplace_back(w->lock(name));
    auto got = std::async(std::launch::async, [&] {
      std::unique_ptr<redisync::MultiLock> lock =
          red ? std::make_unique<redisync::RedLock>(members)
              : std::make_unique<redisync::MultiLock>(members);
      const bool ok = lock->try_lock_for(std::chrono::milliseconds::max());
      if (ok) lock->unlock();
      return ok;
    });
    ASSERT_EQ(got.wait_for(1s), std::future_status::timeout) << "gave up at once";
    holder2.unlock();
    holder3.unlock();
    ASSERT_EQ(got.wait_for(20s), std::future_status::ready);
    EXPECT_TRUE(got.get());
  }
}

// A hold count or fencing token that is no number (written by someone else) is a ServerError
// naming the key and the value, not std::invalid_argument / std::out_of_range from std::sto*.
TEST(HonestNumbersTest, HoldCountAndTokenThatAreNoNumbersAreServerErrors) {
  RedisServer server;
  redisync::Client client(config_for(server));
  const std::vector<std::string> bad = {"abc", "99999999999999999999", "1x", " 1", "-1x"};
  auto lock = client.lock(unique_name("numbers:count:"));
  lock.lock();
  const auto fields = server.command({"HKEYS", lock.name()});
  ASSERT_EQ(fields.elements.size(), 1u);
  for (const std::string& value : bad) {
    SCOPED_TRACE(value);
    server.command({"HSET", lock.name(), fields.elements[0].str, value});
    redisync::test::expect_error<redisync::ServerError>([&] { (void)lock.hold_count(); },
                                                        {lock.name(), "'" + value + "'"});
  }
  server.command({"DEL", lock.name()});
  lock.unlock();

  auto fenced = client.fenced_lock(unique_name("numbers:token:"));
  const std::string token_key = "redisson_lock_token:{" + fenced.name() + "}";
  for (const std::string& value : bad) {
    SCOPED_TRACE(value);
    server.command({"SET", token_key, value});
    redisync::test::expect_error<redisync::ServerError>([&] { (void)fenced.token(); },
                                                        {token_key, "'" + value + "'"});
  }
}
