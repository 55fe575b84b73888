// A release whose reply is lost (the server ran it; the connection is then reset or stalls)
// must not give back its permits twice, nor count a latch down twice: the call either reports
// success (the step ran exactly once) or, when it cannot know, an error saying the step may
// have run. Real redis-server behind the fault proxy (tests/support/fault_proxy.h), which drops
// exactly the reply of the release script's call.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "lua/scripts.h"
#include "lua/with_preludes.h"
#include "net/executor.h"
#include "redisync/redisync.h"
#include "support/fault_proxy.h"
#include "support/redis_server.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::AfterDrop;
using redisync::test::FaultProxy;
using redisync::test::RedisServer;
using redisync::test::unique_name;

namespace {

// Short timeouts so a stalled connection is given up (and rebuilt) within about a second.
redisync::Config lossy_config(const std::string& url) {
  auto cfg = redisync::Config::from_url(url);
  cfg.timeout = 300ms;
  cfg.connect_timeout = 500ms;
  cfg.retry_attempts = 3;
  cfg.retry_interval = 50ms;
  cfg.reconnection_delay_min = 20ms;
  cfg.reconnection_delay_max = 100ms;
  cfg.subscription_linger = 50ms;
  return cfg;
}

// Drops the reply of the next call of `script` (by its SHA: the client warmed it up already).
// `script` must be the text the library sends, preludes included (lua/with_preludes.h).
void drop_next_reply_of(FaultProxy& proxy, const redisync::lua::Script& script, AfterDrop after) {
  proxy.drop_reply({.command = "EVALSHA", .first_arg = redisync::net::Executor::sha1_of(script)}, 1,
                   after);
}

std::string mode_name(const ::testing::TestParamInfo<AfterDrop>& p) {
  return p.param == AfterDrop::reset ? "reset" : "stall";
}

class LostReleaseReply : public ::testing::TestWithParam<AfterDrop> {
 protected:
  RedisServer server;
  FaultProxy proxy{server.port()};
  redisync::Client client{lossy_config(proxy.url())};
  // Reads the outcome past the proxy (a stalled connection of `client` answers nothing).
  redisync::Client direct{lossy_config(server.url())};
};

}  // namespace

TEST_P(LostReleaseReply, SemaphoreReleaseGivesBackItsPermitOnce) {
  const auto name = unique_name("sem:");
  auto sem = client.semaphore(name);
  auto check = direct.semaphore(name);
  ASSERT_TRUE(sem.try_set_permits(1));
  ASSERT_TRUE(sem.try_acquire());
  sem.release(1);  // loads the script: the dropped call below is surely an EVALSHA that ran
  ASSERT_TRUE(sem.try_acquire());
  ASSERT_EQ(sem.available_permits(), 0);

  drop_next_reply_of(proxy, redisync::lua::with_publish_check<redisync::lua::semaphore_release>(),
                     GetParam());
  EXPECT_NO_THROW(sem.release(1)) << "the release ran on the server; its reply was only lost";
  EXPECT_EQ(proxy.stats().dropped_replies, 1) << "no reply was dropped: the case tested nothing";
  EXPECT_EQ(check.available_permits(), 1) << "the lost-reply release gave its permit back twice";
  EXPECT_TRUE(check.try_acquire());
  EXPECT_FALSE(check.try_acquire()) << "two processes could now be inside a 1-permit section";
}

TEST_P(LostReleaseReply, SemaphoreAddPermitsAddsOnce) {
  const auto name = unique_name("sem:");
  auto sem = client.semaphore(name);
  sem.add_permits(2);
  drop_next_reply_of(proxy, redisync::lua::with_publish_check<redisync::lua::semaphore_release>(),
                     GetParam());
  EXPECT_NO_THROW(sem.add_permits(3));
  EXPECT_EQ(proxy.stats().dropped_replies, 1);
  EXPECT_EQ(direct.semaphore(name).available_permits(), 5);
}

TEST_P(LostReleaseReply, LatchCountDownCountsOnce) {
  const auto name = unique_name("latch:");
  auto latch = client.count_down_latch(name);
  auto check = direct.count_down_latch(name);
  ASSERT_TRUE(latch.try_set_count(3));
  latch.count_down();  // loads the script
  ASSERT_EQ(latch.count(), 2);

  drop_next_reply_of(
      proxy, redisync::lua::with_publish_check<redisync::lua::count_down_latch_count_down>(),
      GetParam());
  EXPECT_NO_THROW(latch.count_down()) << "the count-down ran on the server";
  EXPECT_EQ(proxy.stats().dropped_replies, 1);
  EXPECT_EQ(check.count(), 1) << "the lost-reply count-down counted twice: the latch opens early";
  EXPECT_FALSE(check.try_wait());
}

// A permit-expirable release removes its id, so a resend cannot give the permit back twice;
// but a resend could not tell "my first copy released it" from "its lease expired" either. So
// it is not resent: the call reports that the release may have run, and the permit count is
// right whatever the caller does next.
TEST_P(LostReleaseReply, PermitExpirableReleaseNeverGivesBackTwice) {
  const auto name = unique_name("pes:");
  auto pes = client.permit_expirable_semaphore(name);
  auto check = direct.permit_expirable_semaphore(name);
  ASSERT_TRUE(pes.try_set_permits(1));
  pes.release(pes.acquire());  // loads the script
  const std::string id = pes.acquire();
  ASSERT_EQ(pes.available_permits(), 0);

  // As the library sends it: with the publish check and the shared reclaim step in front.
  drop_next_reply_of(proxy,
                     redisync::lua::with_preludes<redisync::lua::permit_expirable_semaphore_release,
                                                  redisync::lua::publish_check,
                                                  redisync::lua::permit_expirable_semaphore_common>(),
                     GetParam());
  try {
    pes.release(id);
    ADD_FAILURE() << "a release whose reply was lost reported success without knowing";
  } catch (const redisync::Error& e) {
    EXPECT_NE(std::string(e.what()).find("may have run"), std::string::npos) << e.what();
  }
  EXPECT_EQ(proxy.stats().dropped_replies, 1);
  EXPECT_EQ(check.available_permits(), 1);
  EXPECT_FALSE(check.try_release(id)) << "the id was released by the lost-reply call";
  EXPECT_EQ(check.available_permits(), 1) << "the permit was given back twice";
}

INSTANTIATE_TEST_SUITE_P(Faults, LostReleaseReply,
                         ::testing::Values(AfterDrop::reset, AfterDrop::stall), mode_name);
