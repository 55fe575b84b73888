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

// Acquires whose replies time out while the server is stopped still run once it resumes:
// for a reentrant kind each adds a hold to the owner's count that the Client never counted.
// The owner's last unlock must free the lock all the same. It used to leave the uncounted
// holds behind, and every later acquire by the same owner (a reentrant increment) renewed
// them: an owner that locked and unlocked in a loop kept the lock from everyone else while
// it believed it released it each time (the chaos pause case saw every other worker starve).
// The non-reentrant kinds refuse the second copy on the server; their one stalled hold ends
// with its lease, which nothing renews.
template <class K>
class ReentrantContractFaults : public ContractFixture<K> {};
using ReentrantKinds = ::testing::Types<PlainLock, Fair, Fenced, Spin, Write, Read>;
TYPED_TEST_SUITE(ReentrantContractFaults, ReentrantKinds, KindNames);

TYPED_TEST(ReentrantContractFaults, AnOwnersLastUnlockFreesTheLockAfterAcquiresWhoseRepliesWereLost) {
  for (const auto handoff : {redisync::Handoff::wake, redisync::Handoff::grant}) {
    SCOPED_TRACE(handoff == redisync::Handoff::wake ? "wake mode" : "grant mode");
    const std::string name = redisync::test::unique_name("contract:lost-replies:");
    auto cfg = redisync::test::config_for(this->server_);
    cfg.timeout = 300ms;
    cfg.retry_attempts = 0;
    cfg.handoff = handoff;
    redisync::Client client(cfg);
    auto lock = TypeParam::make(client, name);
    lock.lock();  // the kind's scripts are cached now: the stalled attempts are not NOSCRIPT
    lock.unlock();
    const int unanswered = redisync::test::while_server_paused(this->server_, 1500ms, [&] {
      int failed = 0;
      for (int i = 0; i < 2; ++i) {
        try {
          if (lock.try_lock_for(50ms)) lock.unlock();  // (not expected: the server is stopped)
        } catch (const redisync::Error&) {
          ++failed;
        }
      }
      return failed;
    });
    ASSERT_GE(unanswered, 1) << "no acquire was left unanswered: the case tests nothing";
    ASSERT_TRUE(redisync::test::answers_again(client));
    // The owner takes the lock again and lets it go: nothing of it may stay (the watchdog
    // lease is 30 s, so no expiry can have freed it meanwhile).
    lock.lock();
    lock.unlock();
    EXPECT_EQ(this->server_.command({"EXISTS", name}).as_integer(), 0)
        << "the owner's last unlock left its lost holds behind";
    auto rival = TypeParam::rival(this->b_, name);
    EXPECT_TRUE(this->acquirable_elsewhere(rival))
        << "another owner cannot take the lock after the owner's last unlock";
  }
}

}  // namespace
