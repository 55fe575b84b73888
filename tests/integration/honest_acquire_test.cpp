// SPDX-License-Identifier: Apache-2.0
// Issue 22 item 1 (semaphores): a timed acquire whose server call times out after the caller's deadline
// must not answer "not acquired" when the script ran. The server is stopped (SIGSTOP) while
// the attempt is sent: the client's reply timeout fires after the wait is over, and the script
// runs once the server resumes. The answer must match what the server holds.
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "lock_kinds_util.h"
#include "support/server_pause.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::sleepy_config;
using redisync::test::unique_name;
using namespace redisync::test::kinds;

namespace {

// Runs `acquire` (a timed acquire with a short wait) while the server is stopped for 1 s; the
// attempt waits in the socket and runs when the server resumes. Returns what `acquire` said.
bool acquire_while_server_sleeps(RedisServer& server, redisync::Client& client,
                                 const std::function<bool()>& acquire) {
  client.execute({"PING"});  // connected: the attempt is sent, not stuck in the handshake
  return redisync::test::while_server_paused(server, 1s, acquire);
}

}  // namespace

// Permits have no owner: the acquisition carries a request record, so the answer can be
// confirmed (or the request cancelled for good) after the reply was lost.
TEST(HonestAcquireTest, SemaphoreTryAcquireForSaysNoWhileThePermitIsGone) {
  RedisServer server;
  redisync::Client client(sleepy_config(server));
  auto sem = client.semaphore(unique_name("honest:sem:"));
  ASSERT_TRUE(sem.try_set_permits(1));
  const bool got = acquire_while_server_sleeps(server, client, [&] { return sem.try_acquire_for(400ms); });
  std::this_thread::sleep_for(300ms);  // a late copy of the request would have run by now
  EXPECT_EQ(sem.available_permits(), got ? 0 : 1) << (got ? "acquired" : "not acquired");
  if (got) sem.release();
  EXPECT_EQ(sem.available_permits(), 1);
}

TEST(HonestAcquireTest, SemaphoreAcquireThrowsWhileThePermitIsGone) {
  RedisServer server;
  redisync::Client client(sleepy_config(server));
  auto sem = client.semaphore(unique_name("honest:sem:"));
  ASSERT_TRUE(sem.try_set_permits(1));
  acquire_while_server_sleeps(server, client, [&] {
    sem.acquire();  // the old code threw TimeoutError here while the permit was taken
    return true;
  });
  EXPECT_EQ(sem.available_permits(), 0);
  sem.release();
  EXPECT_EQ(sem.available_permits(), 1);
}

TEST(HonestAcquireTest, PermitExpirableSemaphoreGivesNoIdWhileAnIdStays) {
  RedisServer server;
  redisync::Client client(sleepy_config(server));
  const std::string name = unique_name("honest:pes:");
  auto pes = client.permit_expirable_semaphore(name);
  ASSERT_TRUE(pes.try_set_permits(1));
  std::optional<std::string> id;
  acquire_while_server_sleeps(server, client, [&] {
    id = pes.try_acquire_for(400ms);
    return id.has_value();
  });
  std::this_thread::sleep_for(300ms);
  const long long ids = server.command({"ZCARD", "{" + name + "}:timeout"}).as_integer();
  EXPECT_EQ(ids, id ? 1 : 0) << "ids in the set while the caller got " << (id ? *id : "none");
  if (id) pes.release(*id);
  EXPECT_EQ(pes.available_permits(), 1);
}
