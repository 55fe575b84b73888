// SPDX-License-Identifier: Apache-2.0
// `status` and `ls` claim a kind only when the keys prove it (issue 37): `status` called any
// string a semaphore and any hash a lock, `ls` listed every integer key on the server as a
// semaphore, and a fair lock nobody waited for was shown as a plain lock. Keys written by the
// library and raw (`SET n 5`: an integer that is user data) against a real server.
#include <future>

#include "cli_support.h"
#include "redisync/client.h"
#include "redisync/fair_lock.h"
#include "redisync/fenced_lock.h"
#include "redisync/semaphore.h"

namespace redisync::test {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class CliLayoutKindTest : public CliTest {
 protected:
  ProcessResult status(const std::string& name) {
    return cli({"status", "--redis", server_.url(), "--json", name});
  }
  ProcessResult ls(const std::string& pattern, bool counts = false) {
    std::vector<std::string> args{"ls", "--redis", server_.url(), "--json"};
    if (counts) args.push_back("--counts");
    args.push_back(pattern);
    return cli(args);
  }
};

TEST_F(CliLayoutKindTest, AnIntegerAnybodyWroteIsNotClaimedASemaphore) {
  const std::string n = unique_name("cli:layout:n:");
  server_.command({"SET", n, "5"});  // user data that happens to be a number

  auto r = status(n);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output,
                  "\"kind\":\"ambiguous\",\"candidates\":[\"semaphore\","
                  "\"permit-expirable-semaphore\",\"count-down-latch\"],"
                  "\"may_be_data\":true"))
      << r.output;
  r = cli({"status", "--redis", server_.url(), n});
  EXPECT_TRUE(has(r.output, "or anybody's number: the keys cannot tell")) << r.output;

  r = ls(n);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "[]\n") << "ls lists no integer key unless asked (--counts)";
  r = ls(n, true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "\"kind\":\"ambiguous\"")) << r.output;

  // A semaphore the library made looks just the same: said so, not guessed.
  const std::string sem = unique_name("cli:layout:sem:");
  Client client(server_.url());
  ASSERT_TRUE(client.semaphore(sem).try_set_permits(3));
  r = status(sem);
  EXPECT_TRUE(has(r.output, "\"kind\":\"ambiguous\"")) << r.output;
  EXPECT_TRUE(has(r.output, "\"permits\":3")) << r.output;
}

TEST_F(CliLayoutKindTest, TextAndUserHashesAreNoKind) {
  const std::string text = unique_name("cli:layout:text:");
  const std::string hash = unique_name("cli:layout:hash:");
  server_.command({"SET", text, "hello"});
  server_.command({"HSET", hash, "user", "bob"});
  auto r = status(text);
  EXPECT_TRUE(has(r.output, "\"kind\":\"other\"")) << "text is not a semaphore: " << r.output;
  r = status(hash);
  EXPECT_TRUE(has(r.output, "\"kind\":\"other\"")) << "a user's hash is not a lock: " << r.output;
  EXPECT_FALSE(has(r.output, "\"holders\"")) << r.output;
  r = cli({"status", "--redis", server_.url(), hash});
  EXPECT_TRUE(has(r.output, "other (Redis type hash)")) << r.output;
}

TEST_F(CliLayoutKindTest, AFairLockIsClaimedOnlyWhileItsQueueProvesIt) {
  const std::string name = unique_name("cli:layout:fair:");
  Client holder_client(server_.url());
  Client waiter_client(server_.url());
  FairLock held = holder_client.fair_lock(name);
  held.lock();

  // Nobody waits: the keys are a plain lock's.
  auto r = status(name);
  EXPECT_TRUE(has(r.output, "\"kind\":\"ambiguous\",\"candidates\":[\"lock\",\"fair-lock\"]"))
      << r.output;

  // A waiter queues: the queue proves a fair lock.
  FairLock waiting = waiter_client.fair_lock(name);
  auto waiter = std::async(std::launch::async, [&] {  // its owner is this thread: it unlocks
    const bool acquired = waiting.try_lock_for(std::chrono::seconds(20));
    if (acquired) waiting.unlock();
    return acquired;
  });
  ASSERT_TRUE(wait_until([&] { return key_exists("redisson_lock_queue:{" + name + "}"); }, 10s));
  r = status(name);
  EXPECT_TRUE(has(r.output, "\"kind\":\"fair-lock\"")) << r.output;
  r = ls(name);
  EXPECT_TRUE(has(r.output, "\"kind\":\"fair-lock\"")) << r.output;
  EXPECT_TRUE(has(r.output, "\"waiters\":1")) << r.output;

  held.unlock();
  EXPECT_TRUE(waiter.get()) << "the queued waiter gets the lock once it is released";
}

TEST_F(CliLayoutKindTest, StatusAndLsAgreeOnAFencedLock) {
  const std::string name = unique_name("cli:layout:fenced:");
  Client client(server_.url());
  FencedLock fenced = client.fenced_lock(name);
  const auto token = fenced.lock_and_get_token();
  auto r = status(name);
  EXPECT_TRUE(has(r.output, "\"kind\":\"fenced-lock\"")) << r.output;
  EXPECT_TRUE(has(r.output, "\"fence_token\":\"" + std::to_string(token) + "\"")) << r.output;
  r = ls(name);
  EXPECT_TRUE(has(r.output, "\"kind\":\"fenced-lock\"")) << r.output;
  fenced.unlock();
}

}  // namespace
}  // namespace redisync::test
