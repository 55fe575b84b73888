// Issue 17 item 7: the fair lock's queue deadlines are absolute wall-clock times. They used to
// come from each client's own clock, so a client whose clock was behind was dropped from the
// queue as "dead" by everyone else and lost its turn. The scripts now read the server's TIME.
// The worker runs under faketime (its wall clock two hours behind; its steady clock untouched).
#include <gtest/gtest.h>

#include <cstdlib>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;

TEST(ClockJump, FairLockWaiterWithAClockTwoHoursBehindKeepsItsTurn) {
  ASSERT_EQ(::access("/usr/bin/faketime", X_OK), 0) << "faketime is not installed (scripts/deps.sh installs it)";
  RedisServer server;
  redisync::Client a(redisync::Config::from_url(server.url()));
  redisync::Client b(redisync::Config::from_url(server.url()));
  const auto name = unique_name("fair:");
  const auto order = unique_name("order:");
  const std::string queue = "redisson_lock_queue:{" + name + "}";
  auto held = a.fair_lock(name);
  held.lock();

  // The worker queues first (its wall clock 2 h behind, monotonic clock real).
  // libfaketime is preloaded ahead of an ASan build's runtime, which ASan refuses unless told
  // that the order is fine (libfaketime only wraps the clock calls).
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_options = "ASAN_OPTIONS=" + std::string(asan ? asan : "") +
                                   (asan && *asan ? ":" : "") + "verify_asan_link_order=0";
  const std::vector<std::string> argv{"env", "FAKETIME_DONT_FAKE_MONOTONIC=1", asan_options,
                                      "faketime", "-f", "-2h", REDISYNC_TEST_WORKER,
                                      "fair-order", server.url(), name, "20000", order};
  const pid_t worker = redisync::test::detail::spawn_process(argv, -1);
  ASSERT_TRUE(wait_until([&] { return server.command({"LLEN", queue}).as_integer() == 1; }, 10s));

  // Then b queues behind it.
  auto waiter = std::async(std::launch::async, [&] {
    auto lock = b.fair_lock(name);
    if (!lock.try_lock_for(20s)) return false;
    b.execute({"RPUSH", order, "b"});
    lock.unlock();
    return true;
  });
  ASSERT_TRUE(wait_until([&] { return server.command({"LLEN", queue}).as_integer() == 2; }, 10s));
  std::this_thread::sleep_for(300ms);  // both re-poll at least once
  held.unlock();

  EXPECT_TRUE(waiter.get());
  int status = 0;
  ASSERT_TRUE(redisync::test::detail::reap_within(worker, 20s, &status));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const auto list = server.command({"LRANGE", order, "0", "-1"});
  ASSERT_EQ(list.elements.size(), 2u);
  EXPECT_EQ(list.elements[0].as_string(), "worker") << "the waiter with the slow clock lost its turn";
  EXPECT_EQ(list.elements[1].as_string(), "b");
}
