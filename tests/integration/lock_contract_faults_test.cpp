// SPDX-License-Identifier: Apache-2.0
// The lock contract for every lock kind (traits in lock_contract.h), a stalled server. Issue 22
// item 1: a timed acquire whose reply times out after the caller's deadline must not answer
// "not acquired" while the script ran (nor "acquired" while it did not). The server is stopped
// (SIGSTOP) right after the attempt is sent: the reply timeout fires after the 50 ms wait is
// over, and the script runs once the server resumes, on the connection it was sent on. The
// answer must match what the server holds (was honest_acquire_locks_test.cpp, one test per
// kind).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <thread>
#include <type_traits>

#include "lock_contract.h"
#include "support/server_pause.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::sleepy_config;
using namespace redisync::test::contract;

namespace {

template <class K>
class LockContractFaults : public ContractFixture<K> {};
TYPED_TEST_SUITE(LockContractFaults, Kinds, KindNames);

// Takes and releases the lock once (the kind's scripts are then cached on the server: a
// first EVALSHA would fail with NOSCRIPT and never run), then runs `acquire` while the server
// is stopped for 1 s. Returns what `acquire` said.
template <class L>
bool acquire_while_server_sleeps(RedisServer& server, L& lock,
                                 const std::function<bool()>& acquire) {
  lock.lock();
  lock.unlock();
  return redisync::test::while_server_paused(server, 1s, acquire);
}

TYPED_TEST(LockContractFaults, ATimedAcquireAnswersWhatTheServerHoldsAfterAStall) {
  redisync::Client client(sleepy_config(this->server_));
  auto lock = TypeParam::make(client, this->name_);
  bool got = false;
  if constexpr (std::is_same_v<typename TypeParam::Handle, redisync::FencedLock>) {
    std::optional<std::uint64_t> token;
    got = acquire_while_server_sleeps(this->server_, lock, [&] {
      token = lock.try_lock_and_get_token_for(50ms);
      return token.has_value();
    });
    if (got) {
      EXPECT_EQ(*token, lock.token());  // the token the held acquisition consumed
    }
  } else {
    got = acquire_while_server_sleeps(this->server_, lock, [&] { return lock.try_lock_for(50ms); });
  }
  // The answer and the server agree; a hold is released cleanly.
  EXPECT_EQ(got, lock.is_held_by_current_thread());
  EXPECT_EQ(got, lock.is_locked()) << "a hold nobody knows of";
  if (got) lock.unlock();
  EXPECT_FALSE(lock.is_locked());
}

}  // namespace
