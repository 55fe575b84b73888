// SPDX-License-Identifier: Apache-2.0
// The local lease deadline of a hold counts from when its acquire was sent, not from when the
// reply came: a reply delayed (slow network, WAIT, a busy server) must not push the lost notice
// past the end of the lease on the server. One-attempt paths (FairLock try_lock, SpinLock)
// used to count from the reply.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "integration/lock_kinds_util.h"
#include "redisync/redisync.h"
#include "support/fault_proxy.h"
#include "support/redis_server.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::Direction;
using redisync::test::FaultProxy;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

using Factory = std::function<redisync::BasicLock(redisync::Client&, const std::string&)>;

struct LateKind {
  const char* name;
  Factory make;
};

const LateKind kKinds[] = {
    {"lock",
     [](redisync::Client& c, const std::string& n) -> redisync::BasicLock { return c.lock(n); }},
    {"fair",
     [](redisync::Client& c, const std::string& n) -> redisync::BasicLock {
       return c.fair_lock(n);
     }},
    {"spin",
     [](redisync::Client& c, const std::string& n) -> redisync::BasicLock {
       return c.spin_lock(n);
     }},
};

void PrintTo(const LateKind& kind, std::ostream* os) { *os << kind.name; }

class LateReplyTest : public ::testing::TestWithParam<LateKind> {};

}  // namespace

// try_lock_for(0, 3 s) whose reply is held back 1.5 s by a proxy: the server's lease ends about
// 3 s after the send, so the lost notice (lease - lease/10 after the send) must come while the
// key still exists. Counted from the reply it came 1.2 s after the key was gone.
TEST_P(LateReplyTest, LostNoticeOfADelayedAcquireComesAfterTheLeaseEnded) {
  RedisServer server;
  FaultProxy proxy(server.port());
  auto cfg = redisync::Config::from_url(proxy.url());
  cfg.timeout = 10s;
  redisync::Client client(cfg);
  const std::string name = unique_name(std::string("late:") + GetParam().name + ":");
  std::atomic<int> notices{0};
  std::atomic<long long> exists_at_notice{-1};
  client.on_lock_lost([&](const redisync::LockLostEvent&) {
    exists_at_notice = server.command({"EXISTS", name}).as_integer();
    ++notices;
  });
  auto lock = GetParam().make(client, name);
  ASSERT_TRUE(lock.try_lock_for(0ms, 3s));  // loads the script and opens the connection
  lock.unlock();
  proxy.set_delay(Direction::to_client, 1500ms);
  ASSERT_TRUE(lock.try_lock_for(0ms, 3s));
  proxy.clear();
  ASSERT_TRUE(wait_until([&] { return notices.load() > 0; }, 8s, 10ms)) << "no lost notice";
  EXPECT_EQ(exists_at_notice.load(), 1)
      << "the holder was told only after its lease had ended on the server";
  lock.unlock();
}

INSTANTIATE_TEST_SUITE_P(Kinds, LateReplyTest, ::testing::ValuesIn(kKinds),
                         [](const auto& p) { return std::string(p.param.name); });
