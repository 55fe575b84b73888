// SPDX-License-Identifier: Apache-2.0
// A release whose reply is lost (the server ran it; the connection is then reset or stalls)
// must not give back its permits twice, nor count a latch down twice: the call either reports
// success (the step ran exactly once) or, when it cannot know, an error saying the step may
// have run. Real redis-server behind the fault proxy (tests/support/fault_proxy.h), which drops
// exactly the reply of the release script's call.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>

#include "lua/scripts.h"
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
// `script` must be the text the library sends (a lua::Script is: its sub-steps are in it).
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

  drop_next_reply_of(proxy, redisync::lua::semaphore_release, GetParam());
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
  drop_next_reply_of(proxy, redisync::lua::semaphore_release, GetParam());
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

  drop_next_reply_of(proxy, redisync::lua::count_down_latch_count_down, GetParam());
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
  drop_next_reply_of(proxy, redisync::lua::permit_expirable_semaphore_release, GetParam());
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

// A lock release whose reply is lost after it ran, while the hold's local lease deadline passes
// (the watchdog's lease, 400 ms, is shorter than the 500 ms timeout; its renewals queue behind
// the lost reply on a stalled connection): the release is resent with the same record on a
// fresh connection and answered from it. The holder is told neither of a failure nor of a
// lost lock (it held the lock until its release ran), and the resend leaves alone the lock a
// second client took meanwhile.
class LostLockReleaseReply : public LostReleaseReply {
 protected:
  static redisync::Config short_lease(const std::string& url) {
    auto cfg = lossy_config(url);
    cfg.timeout = 500ms;
    cfg.lock_watchdog_timeout = 400ms;  // renewed every 133 ms, deadline 360 ms after a renewal
    return cfg;
  }
  redisync::Client holder{short_lease(proxy.url())};
  std::atomic<int> lost{0};
  void SetUp() override {
    holder.on_lock_lost([this](const redisync::LockLostEvent&) { ++lost; });
  }
  // Takes and releases `lock` once (loads the release script: the dropped call below is an
  // EVALSHA that ran) and waits until that release's record is deleted.
  void warm_up(redisync::Lock& lock) {
    lock.lock();
    lock.unlock_checked();
    ASSERT_TRUE(redisync::test::wait_until(
        [&] { return server.command({"KEYS", "redisson_unlock_latch:*"}).elements.empty(); }, 5s));
  }
  void drop_next_release_reply() {
    proxy.drop_reply({.command = "EVALSHA", .arg_containing = "redisson_unlock_latch"}, 1,
                     GetParam());
  }
};

TEST_P(LostLockReleaseReply, ReleaseThatRanIsNeitherAFailureNorALoss) {
  const auto name = unique_name("lock:");
  auto lock = holder.lock(name);
  warm_up(lock);
  lock.lock();
  std::this_thread::sleep_for(200ms);  // renewals answered: the hold is sound
  ASSERT_EQ(lost.load(), 0);

  // A second client waits for the lock; it gets it once the release ran on the server.
  auto other = direct.lock(name);
  auto taken = std::async(std::launch::async, [&] {
    const bool got = other.try_lock_for(10s, 10s);
    return got ? other.owner_field(redisync::Client::current_thread_id()) : std::string();
  });
  drop_next_release_reply();
  EXPECT_NO_THROW(lock.unlock_checked()) << "the release ran on the server; its reply was only lost";
  EXPECT_EQ(proxy.stats().dropped_replies, 1) << "no reply was dropped: the case tested nothing";
  // The 400 ms lease's local deadline may pass before the resend is answered (always with a
  // stall, whose timeout is 500 ms): the loss found meanwhile waits for the release's outcome,
  // and the confirmed release shows the hold was there until it ran.
  EXPECT_EQ(lost.load(), 0) << "a hold released while it was held was reported lost";
  const std::string other_field = taken.get();
  ASSERT_FALSE(other_field.empty()) << "the release never freed the lock";
  EXPECT_EQ(server.command({"HGET", name, other_field}).debug_string(), "\"1\"")
      << "the resent release freed the lock the second client had taken";
  EXPECT_FALSE(lock.is_held_by_current_thread());
  EXPECT_TRUE(other.force_unlock());
}

// The same lost reply, but the release cannot be confirmed: its record is gone (deleted here
// the moment it appears, as if it had expired) when the resend arrives. The resend finds the
// lock not held, so unlock_checked() says the lock was lost: a loss that the release does not
// disprove is still reported. Run with a stall only: after a reset the resend follows within
// retry_interval (50 ms), too short a window to delete the record reliably from here; a stall
// gives the timeout (500 ms).
class UnconfirmedLockRelease : public LostLockReleaseReply {};

TEST_P(UnconfirmedLockRelease, StillReportsTheLoss) {
  const auto name = unique_name("lock:");
  auto lock = holder.lock(name);
  warm_up(lock);
  lock.lock();
  std::this_thread::sleep_for(200ms);
  std::atomic<bool> stop{false};
  auto eraser = std::async(std::launch::async, [&] {
    for (int i = 0; i < 2000 && !stop; ++i) {  // bounded: 2000 looks 1 ms apart
      auto keys = server.command({"KEYS", "redisson_unlock_latch:*"});
      if (!keys.elements.empty()) {
        server.command({"DEL", keys.elements[0].str});
        return true;
      }
      std::this_thread::sleep_for(1ms);
    }
    return false;
  });
  drop_next_release_reply();
  EXPECT_THROW(lock.unlock_checked(), redisync::LockLostError);
  stop = true;
  EXPECT_TRUE(eraser.get()) << "the release record never appeared";
  EXPECT_EQ(proxy.stats().dropped_replies, 1);
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
}

INSTANTIATE_TEST_SUITE_P(Faults, LostLockReleaseReply,
                         ::testing::Values(AfterDrop::reset, AfterDrop::stall), mode_name);

INSTANTIATE_TEST_SUITE_P(Faults, UnconfirmedLockRelease, ::testing::Values(AfterDrop::stall),
                         mode_name);

INSTANTIATE_TEST_SUITE_P(Faults, LostReleaseReply,
                         ::testing::Values(AfterDrop::reset, AfterDrop::stall), mode_name);

// A release's first copy overtaken by its resend (issue 18; the reverted fix 258c742 failed
// this): the first copy is held back on a connection the client gave up (here withheld by the
// proxy, as a partition's backlog held it in chaos Partition/rw-mix) until after the resend was
// answered on a fresh connection and the same owner (same thread: same owner field) took the
// lock again. The late copy carries the same release record as the resend, so it must find
// the resend's outcome recorded and change nothing, whichever outcome that was:
//   - released: the resend freed the hold (the record must not have been swept meanwhile);
//   - not held: the hold was gone when the resend ran (the nil outcome must be recorded too).
class LateReleaseCopy : public ::testing::TestWithParam<bool> {
 protected:
  static redisync::Config config(const std::string& url) {
    auto cfg = lossy_config(url);
    cfg.timeout = 500ms;
    cfg.lock_watchdog_timeout = 10s;  // the hold outlives the stall unless the test ends it
    return cfg;
  }
  RedisServer server;
  FaultProxy proxy{server.port()};
  redisync::Client holder{config(proxy.url())};
};

TEST_P(LateReleaseCopy, NeverFreesTheOwnersNextHold) {
  const bool gone_before_resend = GetParam();
  const auto name = unique_name("lock:");
  auto lock = holder.lock(name);
  lock.lock();
  lock.unlock_checked();  // loads the script
  lock.lock();
  const std::string field = lock.owner_field(redisync::Client::current_thread_id());
  proxy.withhold_request({.command = "EVALSHA", .arg_containing = "redisson_unlock_latch"}, 1);
  // Ends the hold behind the holder's back (as an expired lease would) once the first copy is
  // withheld, well before the resend (a timeout, 500 ms, later).
  auto eraser = std::async(std::launch::async, [&] {
    if (!gone_before_resend) return true;
    if (!redisync::test::wait_until([&] { return proxy.stats().withheld == 1; }, 5s)) return false;
    server.command({"DEL", name});
    return true;
  });
  if (gone_before_resend) {
    EXPECT_THROW(lock.unlock_checked(), redisync::LockLostError);
  } else {
    EXPECT_NO_THROW(lock.unlock_checked()) << "the resend released the lock";
  }
  EXPECT_TRUE(eraser.get());
  const auto held = proxy.withheld();
  ASSERT_EQ(held.size(), 1u) << "no release was withheld: the case tested nothing";
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
  // Long enough for a batched sweep of the record (5 ms after the answer) to have run.
  std::this_thread::sleep_for(100ms);

  lock.lock();  // the same owner's next hold
  ASSERT_EQ(server.command({"HGET", name, field}).debug_string(), "\"1\"");
  const auto late = server.command(held[0]);  // the first copy arrives at last
  EXPECT_EQ(server.command({"HGET", name, field}).debug_string(), "\"1\"")
      << "the late first copy of the earlier release freed the owner's next hold (it answered "
      << late.debug_string() << ")";
  EXPECT_TRUE(lock.is_held_by_current_thread());
  EXPECT_NO_THROW(lock.unlock_checked());
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
}

INSTANTIATE_TEST_SUITE_P(Faults, LateReleaseCopy, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? std::string("gone_before_resend")
                                          : std::string("released_by_resend");
                         });
