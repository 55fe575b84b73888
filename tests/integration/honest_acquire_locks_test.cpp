// Issue 22 item 1, lock kinds: a timed acquire whose reply times out after the caller's
// deadline must not answer "not acquired" while the script ran (nor "acquired" while it did
// not). The server is stopped (SIGSTOP) right after the attempt is sent: the reply timeout
// fires after the 50 ms wait is over, and the script runs once the server resumes, on the
// connection it was sent on. The answer must match what the server holds.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <thread>

#include "lock_kinds_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::sleepy_config;
using redisync::test::unique_name;
using namespace redisync::test::kinds;

namespace {

// Takes and releases the lock once (the kind's scripts are then cached on the server: a
// first EVALSHA would fail with NOSCRIPT and never run), then runs `acquire` while the server
// is stopped for 1 s. Returns what `acquire` said.
template <class L>
bool acquire_while_server_sleeps(RedisServer& server, L& lock,
                                 const std::function<bool()>& acquire) {
  lock.lock();
  lock.unlock();
  server.pause();
  std::jthread waker([&] {
    std::this_thread::sleep_for(1s);
    server.resume();
  });
  const bool got = acquire();
  waker.join();
  return got;
}

// The answer and the server agree; a hold is released cleanly.
template <class L>
void expect_answer_matches_server(bool got, L& lock) {
  EXPECT_EQ(got, lock.is_held_by_current_thread());
  EXPECT_EQ(got, lock.is_locked()) << "a hold nobody knows of";
  if (got) lock.unlock();
  EXPECT_FALSE(lock.is_locked());
}

}  // namespace

TEST(HonestAcquireTest, LockTryLockForAnswerMatchesTheServerAfterAStall) {
  RedisServer server;
  redisync::Client client(sleepy_config(server));
  auto lock = client.lock(unique_name("honest:lock:"));
  const bool got =
      acquire_while_server_sleeps(server, lock, [&] { return lock.try_lock_for(50ms); });
  expect_answer_matches_server(got, lock);
}

TEST(HonestAcquireTest, FairLockTryLockForAnswerMatchesTheServerAfterAStall) {
  RedisServer server;
  redisync::Client client(sleepy_config(server));
  auto lock = client.fair_lock(unique_name("honest:fair:"));
  const bool got =
      acquire_while_server_sleeps(server, lock, [&] { return lock.try_lock_for(50ms); });
  expect_answer_matches_server(got, lock);
}

TEST(HonestAcquireTest, ReadLockTryLockForAnswerMatchesTheServerAfterAStall) {
  RedisServer server;
  redisync::Client client(sleepy_config(server));
  auto read = client.read_write_lock(unique_name("honest:rw:")).read_lock();
  const bool got =
      acquire_while_server_sleeps(server, read, [&] { return read.try_lock_for(50ms); });
  expect_answer_matches_server(got, read);
}

TEST(HonestAcquireTest, WriteLockTryLockForAnswerMatchesTheServerAfterAStall) {
  RedisServer server;
  redisync::Client client(sleepy_config(server));
  auto write = client.read_write_lock(unique_name("honest:rw:")).write_lock();
  const bool got =
      acquire_while_server_sleeps(server, write, [&] { return write.try_lock_for(50ms); });
  expect_answer_matches_server(got, write);
}

TEST(HonestAcquireTest, FencedLockTokenMatchesTheServerAfterAStall) {
  RedisServer server;
  redisync::Client client(sleepy_config(server));
  auto lock = client.fenced_lock(unique_name("honest:fenced:"));
  std::optional<std::uint64_t> token;
  const bool got = acquire_while_server_sleeps(server, lock, [&] {
    token = lock.try_lock_and_get_token_for(50ms);
    return token.has_value();
  });
  if (got) {
    EXPECT_EQ(*token, lock.token());  // the token the held acquisition consumed
  }
  expect_answer_matches_server(got, lock);
}

TEST(HonestAcquireTest, SpinLockTryLockForAnswerMatchesTheServerAfterAStall) {
  RedisServer server;
  redisync::Client client(sleepy_config(server));
  auto lock = client.spin_lock(unique_name("honest:spin:"));
  const bool got =
      acquire_while_server_sleeps(server, lock, [&] { return lock.try_lock_for(50ms); });
  expect_answer_matches_server(got, lock);
}
