// SPDX-License-Identifier: Apache-2.0
// `redisync ls` and `redisync top` against real servers: every kind found by SCAN in its
// Redisson layout (user data left out), a cluster's masters all scanned, and `top` run under
// tmux with its screen read back by capture-pane.
#include <iostream>
#include <set>
#include <thread>

#include "cli_support.h"
#include "redisync/client.h"
#include "redisync/fenced_lock.h"
#include "redisync/lock.h"
#include "redisync/permit_expirable_semaphore.h"
#include "redisync/read_write_lock.h"
#include "redisync/semaphore.h"
#include "support/redis_cluster.h"

namespace redisync::test {
namespace {

class CliLsTest : public CliTest {};

TEST_F(CliLsTest, ListsEveryKindAndNothingElse) {
  const std::string base = unique_name("cli:ls:");
  Client client(server_.url());
  Lock lock = client.lock(base + ":lock");
  lock.lock();
  FencedLock fenced = client.fenced_lock(base + ":fenced");
  const auto token = fenced.lock_and_get_token();
  ReadWriteLock rw = client.read_write_lock(base + ":rw");
  rw.lock_shared();
  client.semaphore(base + ":sem").try_set_permits(3);
  auto pes = client.permit_expirable_semaphore(base + ":pes");
  pes.try_set_permits(2);
  const std::string permit = pes.acquire(Duration{60000});
  // A fair lock with a holder and one queued waiter, in the wire layout (docs/wire-format.md §4.1).
  server_.command({"HSET", base + ":fair", "holder:1", "1"});
  server_.command({"PEXPIRE", base + ":fair", "60000"});
  server_.command({"RPUSH", "redisson_lock_queue:{" + base + ":fair}", "waiter:2"});
  server_.command({"ZADD", "redisson_lock_timeout:{" + base + ":fair}", "99999999999999",
                   "waiter:2"});
  // User data: not listed.
  server_.command({"SET", base + ":text", "hello"});
  server_.command({"HSET", base + ":hash", "a", "b"});

  auto r = cli({"ls", "--redis", server_.url(), "--counts", base + "*"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::cout << "--- redisync ls --counts " << base << "*\n" << r.output << "---\n";
  // A lock hash alone: a lock, or a fair lock nobody waits for (the keys cannot tell).
  EXPECT_EQ(row_of(r.output, base + ":lock").at(0), "ambiguous") << r.output;
  EXPECT_NE(r.output.find("lock or fair-lock"), std::string::npos) << r.output;
  EXPECT_EQ(row_of(r.output, base + ":fenced").at(0), "fenced-lock") << r.output;
  EXPECT_NE(r.output.find("token " + std::to_string(token)), std::string::npos) << r.output;
  EXPECT_EQ(row_of(r.output, base + ":rw").at(0), "read-write-lock") << r.output;
  const auto fair = row_of(r.output, base + ":fair");
  ASSERT_GE(fair.size(), 6u) << r.output;
  EXPECT_EQ(fair[0], "fair-lock");
  EXPECT_EQ(fair[2], "1");  // holders
  EXPECT_EQ(fair[5], "1");  // waiters (the queue)
  const auto sem = row_of(r.output, base + ":sem");
  ASSERT_GE(sem.size(), 6u) << r.output;
  EXPECT_EQ(sem[0], "ambiguous") << "an integer alone: a semaphore's, a latch's or anybody's";
  EXPECT_EQ(sem[5], "3");
  EXPECT_EQ(row_of(r.output, base + ":pes").at(0), "permit-expirable-semaphore") << r.output;
  EXPECT_NE(r.output.find("1 held"), std::string::npos) << r.output;
  EXPECT_TRUE(row_of(r.output, base + ":text").empty()) << r.output;
  EXPECT_TRUE(row_of(r.output, base + ":hash").empty()) << r.output;
  EXPECT_EQ(r.output.find("redisson_"), std::string::npos) << r.output;  // helpers folded in

  r = cli({"ls", "--redis", server_.url(), "--json", base + ":fenced"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"kind\":\"fenced-lock\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"token\":\"" + std::to_string(token) + "\""), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.front(), '[');

  lock.unlock();
  fenced.unlock();
  rw.unlock_shared();
  pes.release(permit);
}

// A name with a space ("nightly report") was two words of its row: a script reading the NAME
// column (awk '{print $2}') got "nightly", and every later column was shifted by one. The
// space is shown as "\x20" (printable()'s escapes); --json has the name as it is.
TEST_F(CliLsTest, NameWithASpaceIsOneWordOfItsRow) {
  const std::string base = unique_name("cli:ls:");
  Client client(server_.url());
  Lock lock = client.lock(base + ":nightly report");
  lock.lock();
  auto r = cli({"ls", "--redis", server_.url(), base + "*"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto row = row_of(r.output, base + ":nightly\\x20report");
  // ambiguous NAME 1 OWNER LEASE - - lock or fair-lock (the DETAIL, last, is words)
  ASSERT_EQ(row.size(), 10u) << r.output;
  EXPECT_EQ(row[0], "ambiguous");  // lock or fair-lock
  EXPECT_EQ(row[2], "1");
  EXPECT_EQ(row[5], "-");
  r = cli({"ls", "--redis", server_.url(), "--json", base + "*"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(base + ":nightly report\""), std::string::npos) << r.output;
  lock.unlock();
}

TEST_F(CliLsTest, NothingMatchingPrintsNothingAndUnreachableExits69) {
  auto r = cli({"ls", "--redis", server_.url(), unique_name("cli:none:") + "*"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "");
  r = cli({"ls", "--redis", server_.url(), "--json", unique_name("cli:none:") + "*"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "[]\n");
  const std::string url = "redis://127.0.0.1:" + std::to_string(unused_port()) +
                          "?connect_timeout=500ms&retry_attempts=0";
  r = cli({"ls", "--redis", url});
  EXPECT_EQ(r.exit_code, 69) << r.output;
  r = cli({"ls", "--redis", server_.url(), "--count", "0"});
  EXPECT_EQ(r.exit_code, 64) << r.output;
}

TEST_F(CliLsTest, ScansEveryMasterOfACluster) {
  RedisCluster cluster(3);
  Client client(cluster.url());
  const std::string base = unique_name("cli:lsc:");
  std::vector<Lock> locks;
  std::set<std::size_t> masters;
  for (int i = 0; i < 12; ++i) {
    const std::string name = base + ":" + std::to_string(i);
    locks.push_back(client.lock(name));
    locks.back().lock();
    masters.insert(cluster.master_of_slot(cluster.key_slot(name)));
  }
  ASSERT_GE(masters.size(), 2u);  // the names really are spread over masters
  const auto r = cli({"ls", "--redis", cluster.url(), base + "*"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(row_of(r.output, base + ":" + std::to_string(i)).at(0), "ambiguous") << r.output;
  }
  for (auto& l : locks) l.unlock();
}

TEST_F(CliLsTest, TopShowsHoldersAndChangesAndQuitsOnQ) {
  ASSERT_EQ(run_process({"sh", "-c", "command -v tmux"}, 10s).exit_code, 0)
      << "tmux is needed (scripts/deps.sh installs it)";
  const std::string base = unique_name("cli:top:");
  Client client(server_.url());
  Lock lock = client.lock(base + ":job");
  lock.lock();
  Tmux tmux;
  const auto started = tmux.start(cli_ + " top --redis " + server_.url() + " '" + base +
                                  "*'; echo EXIT=$?; stty -a | tr ' ;' '\\n\\n' | grep -x -- "
                                  "'-*icanon'; sleep 60");
  ASSERT_EQ(started.exit_code, 0) << started.output;
  std::string screen;
  ASSERT_TRUE(wait_until(
      [&] {
        screen = tmux.screen();
        return screen.find(base + ":job") != std::string::npos;
      },
      15s, 100ms))
      << screen;
  // Another owner takes it: top counts a change of holder.
  lock.unlock();
  std::thread([&] { client.lock(base + ":job").lock(); }).join();
  ASSERT_TRUE(wait_until(
      [&] {
        screen = tmux.screen();
        return screen.find("1*") != std::string::npos || screen.find("\n1 ") != std::string::npos;
      },
      15s, 100ms))
      << screen;
  std::cout << "--- redisync top " << base << "*\n" << screen << "---\n";
  tmux.keys("q");
  ASSERT_TRUE(wait_until(
      [&] {
        screen = tmux.screen();
        return screen.find("EXIT=") != std::string::npos &&
               screen.find("icanon") != std::string::npos;
      },
      15s, 100ms))
      << screen;
  EXPECT_NE(screen.find("EXIT=0"), std::string::npos) << screen;
  // The terminal is back in canonical mode ("icanon", not "-icanon").
  EXPECT_EQ(screen.find("-icanon"), std::string::npos) << screen;
  client.lock(base + ":job").force_unlock();
}

}  // namespace
}  // namespace redisync::test
