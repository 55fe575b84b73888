// SPDX-License-Identifier: Apache-2.0
// Config::log: the library's diagnostic lines go to the hook when one is set (one line each,
// no "redisync: " prefix, nothing on stderr), and to stderr as "redisync: <line>" when none is.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

namespace redisync::test {
namespace {

using namespace std::chrono_literals;

/// The lines a Config::log hook received (from any thread).
class LoggedLines {
 public:
  void add(std::string_view line) {
    std::lock_guard lock(mutex_);
    lines_.emplace_back(line);
  }
  std::vector<std::string> lines() const {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

Config logging_config(const Config& base, const std::shared_ptr<LoggedLines>& logged) {
  Config cfg = base;
  cfg.log = [logged](std::string_view line) { logged->add(line); };
  return cfg;
}

TEST(LogHook, AnUnlockByANonHolderIsALineForTheHookNotForStderr) {
  RedisServer server;
  auto logged = std::make_shared<LoggedLines>();
  Client client(logging_config(config_for(server), logged));
  auto lock = client.lock(unique_name("log-hook:"));

  testing::internal::CaptureStderr();
  lock.unlock();  // not held: a line, never an exception
  const bool one_line = wait_until([&] { return logged->lines().size() == 1; }, 5s);
  const std::string err = testing::internal::GetCapturedStderr();

  ASSERT_TRUE(one_line) << logged->lines().size() << " lines";
  const std::string line = logged->lines().front();
  EXPECT_NE(line.find("unlock of"), std::string::npos) << line;
  EXPECT_NE(line.find("not held by owner"), std::string::npos) << line;
  EXPECT_NE(line.rfind("redisync: ", 0), 0u) << "the hook gets the line without the prefix";
  EXPECT_EQ(line.find('\n'), std::string::npos) << "one line, no newline";
  EXPECT_EQ(err, "") << "with a hook set, nothing goes to stderr";
}

TEST(LogHook, ALostLockWithoutAHandlerIsALineForTheHook) {
  RedisServer server;
  auto logged = std::make_shared<LoggedLines>();
  Client client(logging_config(watchdog_config(server, 600ms), logged));
  const std::string name = unique_name("log-hook-lost:");
  auto lock = client.lock(name);
  lock.lock();
  server.command({"DEL", name});  // the next renewal finds the hold gone

  ASSERT_TRUE(wait_until([&] { return !logged->lines().empty(); }, 5s));
  const std::string line = logged->lines().front();
  EXPECT_NE(line.find("lock '" + name + "'"), std::string::npos) << line;
  EXPECT_NE(line.find("was lost"), std::string::npos) << line;
  lock.unlock();
}

TEST(LogHook, AGuardWhoseReleaseFailsIsALineForTheHook) {
  RedisServer server;
  auto logged = std::make_shared<LoggedLines>();
  Client client(logging_config(config_for(server), logged));
  const std::string name = unique_name("log-hook-guard:");
  auto lock = client.lock(name);

  testing::internal::CaptureStderr();
  {
    Guard<Lock> guard(lock);
    server.command({"DEL", name});  // the release will find the hold gone
  }
  const bool logged_one = wait_until([&] { return !logged->lines().empty(); }, 5s);
  const std::string err = testing::internal::GetCapturedStderr();

  ASSERT_TRUE(logged_one) << "the guard's failed release reached no hook";
  EXPECT_NE(logged->lines().front().find(name), std::string::npos) << logged->lines().front();
  EXPECT_EQ(err, "") << "with a hook set, nothing goes to stderr";
}

TEST(LogHook, AnAsyncHandlerThatThrowsIsALineForItsClientsHook) {
  RedisServer server;
  auto logged = std::make_shared<LoggedLines>();
  Client client(logging_config(config_for(server), logged));
  auto lock = client.lock(unique_name("log-hook-async:"));

  testing::internal::CaptureStderr();
  lock.async_lock(1, [](std::exception_ptr) { throw std::runtime_error("handler boom"); });
  const bool logged_one = wait_until([&] { return !logged->lines().empty(); }, 5s);
  auto released = std::make_shared<std::atomic<bool>>(false);
  lock.async_unlock(1, [released](std::exception_ptr) { released->store(true); });
  EXPECT_TRUE(wait_until([&] { return released->load(); }, 5s));
  const std::string err = testing::internal::GetCapturedStderr();

  ASSERT_TRUE(logged_one) << "the handler's exception reached no hook";
  EXPECT_NE(logged->lines().front().find("handler boom"), std::string::npos)
      << logged->lines().front();
  EXPECT_EQ(err, "") << "with a hook set, nothing goes to stderr";
}

TEST(LogHook, WithoutAHookTheLineGoesToStderrAsToday) {
  RedisServer server;
  testing::internal::CaptureStderr();
  {
    Client client(config_for(server));
    client.lock(unique_name("log-hook-default:")).unlock();
  }  // the destructor stops the I/O thread: every line is written by now
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.rfind("redisync: unlock of ", 0), 0u) << err;
  EXPECT_NE(err.find("not held by owner"), std::string::npos) << err;
}

}  // namespace
}  // namespace redisync::test
