// SPDX-License-Identifier: Apache-2.0
// Issue 22 item 5: `redisync unlock --force NAME` deleted whatever key had that name (a
// semaphore, a latch, a user's list) and printed "released", announcing on the plain lock
// channel so read-write waiters were not woken. Now: only locks, each with its kind's own
// force-unlock; anything else is an error naming the key's type, and nothing is deleted.
#include "cli_support.h"

namespace redisync::test {
namespace {

class CliUnlockKindsTest : public CliTest {
 protected:
  ProcessResult force(const std::string& name) {
    return cli({"unlock", "--redis", server_.url(), "--force", name});
  }
};

TEST_F(CliUnlockKindsTest, NonLocksAreRefusedAndKept) {
  const std::string base = unique_name("cli:notlock:");
  server_.command({"SET", base + ":sem", "5"});       // a semaphore's permits / a latch's count
  server_.command({"RPUSH", base + ":list", "job"});  // a user's list
  server_.command({"HSET", base + ":hash", "field", "value"});  // a user's hash
  server_.command({"SET", base + ":text", "hello"});
  const std::vector<std::pair<std::string, std::string>> cases{
      {base + ":sem", "is a string holding the count 5"},
      {base + ":list", "is a list"},
      {base + ":hash", "is a hash whose field 'field' is not a lock owner"},
      {base + ":text", "is a string"},
  };
  for (const auto& [key, message] : cases) {
    const auto r = force(key);
    EXPECT_EQ(r.exit_code, 1) << key << ": " << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("not a lock; nothing deleted"), std::string::npos) << r.output;
    EXPECT_TRUE(key_exists(key)) << key;
  }
}

TEST_F(CliUnlockKindsTest, EveryLockKindIsReleased) {
  const std::string base = unique_name("cli:kinds:");
  // Fair lock: holder plus a queued waiter; the queue stays (its waiter is alive and will
  // be woken on its own channel).
  server_.command({"HSET", base + ":fair", "someone:1", "1"});
  server_.command({"RPUSH", "redisson_lock_queue:{" + base + ":fair}", "other:2"});
  server_.command({"ZADD", "redisson_lock_timeout:{" + base + ":fair}", "99999999999999",
                   "other:2"});
  // Fenced lock: the token is kept (it must never go down).
  server_.command({"HSET", base + ":fenced", "someone:1", "1"});
  server_.command({"SET", "redisson_lock_token:{" + base + ":fenced}", "7"});
  // Read-write lock in read and write mode.
  server_.command({"HSET", base + ":rwr", "mode", "read", "someone:1", "2"});
  server_.command({"HSET", base + ":rww", "mode", "write", "someone:1:write", "1"});
  for (const std::string suffix : {":fair", ":fenced", ":rwr", ":rww"}) {
    const auto r = force(base + suffix);
    EXPECT_EQ(r.exit_code, 0) << suffix << ": " << r.output;
    EXPECT_EQ(r.output, "released\n") << suffix;
    EXPECT_FALSE(key_exists(base + suffix)) << suffix;
  }
  EXPECT_EQ(server_.command({"GET", "redisson_lock_token:{" + base + ":fenced}"}).as_string(),
            "7");
  EXPECT_EQ(server_.command({"LLEN", "redisson_lock_queue:{" + base + ":fair}"}).as_integer(), 1);
}

// The old force-unlock published on the plain lock channel: a writer waiting on the
// read-write channel slept until its own wait ran out (60 s here) instead of taking the lock.
TEST_F(CliUnlockKindsTest, ForcedReadLockWakesAWaitingWriter) {
  const std::string name = unique_name("cli:rwwake:");
  server_.command({"HSET", name, "mode", "read", "someone:1", "1"});
  server_.command({"PEXPIRE", name, "120000"});
  const std::string marker = temp_file("wrote");
  std::string out;
  const pid_t writer = start_cli({"run", "--redis", server_.url(), "--write", "--wait", "60s",
                                  name, "--", "touch", marker},
                                 &out);
  // The writer is waiting once it subscribed to the read-write channel.
  ASSERT_TRUE(wait_until(
      [&] {
        const auto r = server_.command({"PUBSUB", "NUMSUB", "redisson_rwlock:{" + name + "}"});
        return r.elements.size() == 2 && r.elements[1].as_integer() >= 1;
      },
      10s))
      << read_file(out);
  const auto r = force(name);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(finish(writer, 20s), 0) << read_file(out);
  EXPECT_TRUE(file_exists(marker));
}

}  // namespace
}  // namespace redisync::test
