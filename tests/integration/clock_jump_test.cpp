// SPDX-License-Identifier: Apache-2.0
// Issue 17 item 7: the fair lock's queue deadlines are absolute wall-clock times. They used to
// come from each client's own clock, so a client whose clock was behind was dropped from the
// queue as "dead" by everyone else and lost its turn. The scripts now read the server's TIME.
// The worker runs under faketime (its wall clock two hours off; its steady clock untouched).
// Issue 23 item 1: the permit-expirable semaphore scored its permits' expiry with the client's
// wall clock too (a client 2 h behind had its permits expire at once, one 2 h ahead held them
// 2 h past their lease); its scripts now read the server's TIME as well.
#include <gtest/gtest.h>

#include <glob.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdlib>
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

namespace {

// libfaketime (Debian's package `faketime`), wherever the multiarch directory is; "" if absent.
std::string libfaketime() {
  glob_t found{};
  std::string path;
  if (::glob("/usr/lib/*/faketime/libfaketime.so.1", 0, nullptr, &found) == 0 &&
      found.gl_pathc > 0) {
    path = found.gl_pathv[0];
  }
  ::globfree(&found);
  return path;
}

// `env LD_PRELOAD=libfaketime FAKETIME=OFFSET ... <test worker> args...`: the worker with its
// wall clock moved by OFFSET ("-2h", "+2h"), its monotonic clock real. Not the `faketime`
// wrapper: it forks the worker and keeps a named semaphore per wrapper pid in /dev/shm, which a
// killed wrapper leaves behind (these tests kill their workers); a later wrapper given the same
// pid then exits with "sem_open: File exists" and the worker never starts (a CI failure, found
// with 476 such files in /dev/shm). env execs the worker itself: nothing is left behind.
std::vector<std::string> faketime_worker(const std::string& offset,
                                         const std::vector<std::string>& args) {
  // libfaketime is preloaded ahead of an ASan build's runtime, which ASan refuses unless told
  // that the order is fine (libfaketime only wraps the clock calls).
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_options = "ASAN_OPTIONS=" + std::string(asan ? asan : "") +
                                   (asan && *asan ? ":" : "") + "verify_asan_link_order=0";
  std::vector<std::string> argv{"env", "LD_PRELOAD=" + libfaketime(), "FAKETIME=" + offset,
                                "FAKETIME_DONT_FAKE_MONOTONIC=1", asan_options,
                                REDISYNC_TEST_WORKER};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// A faketime worker whose output goes to a temp file, and what became of it: when a test
// waits for the worker in vain, the message says whether it exited (and how) or still runs,
// and what it printed. (One CI run saw a ThreadSanitizer worker not queue within 10 s, where
// it usually takes under 3 s, with nothing to tell why.)
struct SkewedWorker {
  pid_t pid = -1;
  std::string output_path;

  void start(const std::vector<std::string>& argv) {
    pid = redisync::test::detail::spawn_to_temp_file(argv, "skewed-worker.out", &output_path);
  }
  std::string describe() {
    std::string state = "still running";
    int status = 0;
    if (pid > 0 && redisync::test::detail::try_reap(pid, &status)) {
      state = WIFEXITED(status) ? "exited with " + std::to_string(WEXITSTATUS(status))
                                : "killed by signal " + std::to_string(WTERMSIG(status));
      pid = -1;
    }
    return "the worker " + state + "; its output:\n" + redisync::test::read_text_file(output_path);
  }
};

void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status = 0;
  redisync::test::detail::reap_within(pid, std::chrono::seconds(10), &status);
}

}  // namespace

TEST(ClockJump, FairLockWaiterWithAClockTwoHoursBehindKeepsItsTurn) {
  ASSERT_NE(libfaketime(), "") << "libfaketime is not installed (scripts/deps.sh installs faketime)";
  RedisServer server;
  redisync::Client a(redisync::Config::from_url(server.url()));
  redisync::Client b(redisync::Config::from_url(server.url()));
  const auto name = unique_name("fair:");
  const auto order = unique_name("order:");
  const std::string queue = "redisson_lock_queue:{" + name + "}";
  auto held = a.fair_lock(name);
  held.lock();

  // The worker queues first (its wall clock 2 h behind, monotonic clock real).
  SkewedWorker worker;
  worker.start(faketime_worker("-2h", {"fair-order", server.url(), name, "20000", order}));
  ASSERT_TRUE(wait_until([&] { return server.command({"LLEN", queue}).as_integer() == 1; }, 15s))
      << worker.describe();

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
  ASSERT_TRUE(redisync::test::detail::reap_within(worker.pid, 20s, &status)) << worker.describe();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const auto list = server.command({"LRANGE", order, "0", "-1"});
  ASSERT_EQ(list.elements.size(), 2u);
  EXPECT_EQ(list.elements[0].as_string(), "worker") << "the waiter with the slow clock lost its turn";
  EXPECT_EQ(list.elements[1].as_string(), "b");
}

namespace {

// The one permit of a permit-expirable semaphore on its own server, and a client with the test's
// own clock; take_in_worker() has a worker whose wall clock is off take the permit (killed at
// the end).
struct PermitOfASkewedWorker {
  RedisServer server;
  redisync::Client client{redisync::Config::from_url(server.url())};
  const std::string name = unique_name("pes:");
  const std::string zset = "{" + name + "}:timeout";
  redisync::PermitExpirableSemaphore sem = client.permit_expirable_semaphore(name);
  SkewedWorker worker;

  ~PermitOfASkewedWorker() {
    if (worker.pid > 0) kill_and_reap(worker.pid);
  }
  // Sets the one permit; the worker takes it for `lease_ms`, its wall clock `offset` off.
  void take_in_worker(const std::string& offset, const std::string& lease_ms) {
    ASSERT_TRUE(sem.try_set_permits(1));
    worker.start(faketime_worker(offset, {"pes-hold", server.url(), name, lease_ms}));
    ASSERT_TRUE(wait_until([&] { return server.command({"ZCARD", zset}).as_integer() == 1; }, 15s))
        << worker.describe();
  }
};

}  // namespace

TEST(ClockJump, PermitOfAClientTwoHoursBehindDoesNotExpireAtOnce) {
  ASSERT_NE(libfaketime(), "") << "libfaketime is not installed (scripts/deps.sh installs faketime)";
  PermitOfASkewedWorker p;
  // The worker takes the permit for a minute, its wall clock 2 h behind.
  ASSERT_NO_FATAL_FAILURE(p.take_in_worker("-2h", "60000"));
  // Another client looks: the permit is held, not reclaimed as expired 2 h ago.
  EXPECT_EQ(p.sem.available_permits(), 0) << "the slow client's permit expired at once";
  EXPECT_EQ(p.server.command({"ZCARD", p.zset}).as_integer(), 1);
  EXPECT_FALSE(p.sem.try_acquire().has_value());
}

TEST(ClockJump, PermitOfAClientTwoHoursAheadEndsWithItsLease) {
  ASSERT_NE(libfaketime(), "") << "libfaketime is not installed (scripts/deps.sh installs faketime)";
  PermitOfASkewedWorker p;
  // The worker takes the permit for 1 s, its wall clock 2 h ahead, and never releases it.
  ASSERT_NO_FATAL_FAILURE(p.take_in_worker("+2h", "1000"));
  // The permit comes back when its lease ends, not 2 h later.
  const auto mine = p.sem.try_acquire_for(15s, 10s);
  EXPECT_TRUE(mine.has_value()) << "the fast client's permit outlived its lease";
  if (mine) p.sem.release(*mine);
}
