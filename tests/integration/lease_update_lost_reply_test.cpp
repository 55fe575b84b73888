// SPDX-License-Identifier: Apache-2.0
// Issue 36 defect 3: a lease update whose reply is lost. An update that shortens a lease may
// have run on the server although its caller never heard back; the caller used to keep the
// old, later local deadline, so a second client could take the permit (or lock) while the
// first still believed it held it, and was told only seconds later. Now the local deadline
// becomes the earlier of the old one and the new lease counted from the send before the
// update goes out, stays there when the reply is lost, and only a confirmed reply may move it
// later. Each case drops the update's reply after the server ran it (fault proxy) and checks
// the holder's deadline against the server's expiry, and that a second client gets in only
// after the first was told or its deadline had passed.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <string>

#include "lua/scripts.h"
#include "net/executor.h"
#include "redisync/redisync.h"
#include "support/fault_proxy.h"
#include "support/lost_notices.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::AfterDrop;
using redisync::test::FaultProxy;
using redisync::test::LostNotices;
using redisync::test::RedisServer;
using redisync::test::config_for;
using redisync::test::unique_name;

namespace {

// Short timeouts: a dropped reply fails the call within about half a second.
redisync::Config lease_update_lossy_config(const std::string& url) {
  auto cfg = redisync::Config::from_url(url);
  cfg.timeout = 500ms;
  cfg.connect_timeout = 500ms;
  cfg.retry_attempts = 3;
  cfg.retry_interval = 50ms;
  cfg.reconnection_delay_min = 20ms;
  cfg.reconnection_delay_max = 100ms;
  return cfg;
}

// The invariant of docs/safety.md: the holder's local deadline is no later than the server's
// expiry. `server_left` reads what the server has left (ms); it is read after the deadline,
// and counted from after the read, which favours the library.
void expect_deadline_not_after_server(const redisync::Client& holder,
                                      const std::function<long long()>& server_left,
                                      const std::string& step) {
  const auto deadline = holder.lease_deadline();
  const long long left = server_left();
  const auto after = std::chrono::steady_clock::now();
  ASSERT_TRUE(deadline.has_value())
      << step << ": no local deadline, while the server ends the hold in " << left << " ms";
  EXPECT_LE(*deadline, after + std::chrono::milliseconds(left))
      << step << ": the local deadline is "
      << std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - after).count()
      << " ms ahead, the server's expiry " << left << " ms";
}

// A second client just got what `holder` had: `holder` must have been told by now, or at
// least have passed its deadline (nothing left watched, or a deadline in the past).
void expect_told_or_past_deadline(const redisync::Client& holder, const std::string& what) {
  const auto deadline = holder.lease_deadline();
  const auto now = std::chrono::steady_clock::now();
  EXPECT_TRUE(!deadline || *deadline <= now)
      << "a second client took " << what << " while its holder's local deadline was still "
      << std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - now).count()
      << " ms ahead";
}

class LeaseUpdateLostReply : public ::testing::Test {
 protected:
  void SetUp() override { notices.attach(first); }

  // Drops the reply of the next update_lease (by its script's SHA; the script must be loaded).
  void drop_next_update_reply() {
    proxy.drop_reply({.command = "EVALSHA",
                      .first_arg = redisync::net::Executor::sha1_of(
                          redisync::lua::permit_expirable_semaphore_update_lease)},
                     1, AfterDrop::reset);
  }

  // A composite's lease set on its members (multi_lock_member_expiry.lua), matched by its SHA.
  static redisync::test::RequestMatch member_lease_set() {
    return {.command = "EVALSHA",
            .first_arg = redisync::net::Executor::sha1_of(redisync::lua::multi_lock_member_expiry)};
  }

  RedisServer server;
  FaultProxy proxy{server.port()};
  LostNotices notices;  // declared first: it outlives the Client whose handler it is
  redisync::Client first{lease_update_lossy_config(proxy.url())};
  redisync::Client second{config_for(server)};
  const std::string name = unique_name("pes:lost-update:");
};

}  // namespace

TEST_F(LeaseUpdateLostReply, ShortenedPermitLeaseIsToldBeforeASecondClientTakesThePermit) {
  auto pes = first.permit_expirable_semaphore(name);
  auto other = second.permit_expirable_semaphore(name);
  ASSERT_TRUE(pes.try_set_permits(1));
  const std::string id = pes.acquire(20000ms);
  ASSERT_TRUE(pes.update_lease(id, 20000ms));  // loads the script: the dropped copy runs
  auto left = [&] { return static_cast<long long>(other.remaining_lease(id).count()); };
  expect_deadline_not_after_server(first, left, "after the acquire");

  drop_next_update_reply();
  EXPECT_THROW(pes.update_lease(id, 2000ms), redisync::Error);
  ASSERT_EQ(proxy.stats().dropped_replies, 1);
  ASSERT_LE(left(), 2000) << "the update did not run on the server";
  expect_deadline_not_after_server(first, left, "after the shortening update's reply was lost");

  // The only permit: the second client gets it when the shortened lease ends on the server.
  const auto taken = other.try_acquire_for(10000ms, 20000ms);
  ASSERT_TRUE(taken.has_value()) << "the shortened lease never ended";
  expect_told_or_past_deadline(first, "the permit");
  ASSERT_TRUE(notices.wait_for(1, 5s)) << "the first holder was never told";
  EXPECT_EQ(notices.all().at(0).permit_id, id);
  other.release(*taken);
}

TEST_F(LeaseUpdateLostReply, PermitWithoutExpiryGivenALeaseIsWatchedThoughTheReplyIsLost) {
  auto pes = first.permit_expirable_semaphore(name);
  auto other = second.permit_expirable_semaphore(name);
  ASSERT_TRUE(pes.try_set_permits(1));
  const std::string id = pes.acquire(redisync::PermitExpirableSemaphore::no_expiry);
  ASSERT_TRUE(pes.update_lease(id, redisync::PermitExpirableSemaphore::no_expiry));  // loads it

  drop_next_update_reply();
  EXPECT_THROW(pes.update_lease(id, 2000ms), redisync::Error);
  ASSERT_EQ(proxy.stats().dropped_replies, 1);
  auto left = [&] { return static_cast<long long>(other.remaining_lease(id).count()); };
  ASSERT_LE(left(), 2000) << "the update did not run on the server";
  expect_deadline_not_after_server(first, left, "after the update's reply was lost");

  const auto taken = other.try_acquire_for(10000ms, 20000ms);
  ASSERT_TRUE(taken.has_value()) << "the new lease never ended";
  expect_told_or_past_deadline(first, "the permit");
  EXPECT_TRUE(notices.wait_for(1, 5s)) << "the first holder was never told";
  other.release(*taken);
}

TEST_F(LeaseUpdateLostReply, LengthenedPermitLeaseKeepsTheOldDeadlineUntilConfirmed) {
  auto pes = first.permit_expirable_semaphore(name);
  auto other = second.permit_expirable_semaphore(name);
  ASSERT_TRUE(pes.try_set_permits(1));
  const std::string id = pes.acquire(3000ms);
  const auto before = first.lease_deadline();
  ASSERT_TRUE(before.has_value());
  ASSERT_TRUE(pes.update_lease(id, 3000ms));  // loads the script; moves the deadline later
  const auto confirmed = first.lease_deadline();
  ASSERT_TRUE(confirmed.has_value());
  EXPECT_GE(*confirmed, *before) << "a confirmed update did not move the deadline";

  drop_next_update_reply();
  EXPECT_THROW(pes.update_lease(id, 60000ms), redisync::Error);
  ASSERT_EQ(proxy.stats().dropped_replies, 1);
  auto left = [&] { return static_cast<long long>(other.remaining_lease(id).count()); };
  ASSERT_GT(left(), 30000) << "the update did not run on the server";
  // Not confirmed: the deadline is the one before the update, not a later one.
  EXPECT_EQ(first.lease_deadline(), confirmed);
  expect_deadline_not_after_server(first, left, "after the lengthening update's reply was lost");
  // A confirmed update sets the later deadline.
  ASSERT_TRUE(pes.update_lease(id, 60000ms));
  const auto lengthened = first.lease_deadline();
  ASSERT_TRUE(lengthened.has_value());
  EXPECT_GT(*lengthened, *confirmed + 30s);
  expect_deadline_not_after_server(first, left, "after a confirmed lengthening update");
  pes.release(id);
}

TEST_F(LeaseUpdateLostReply, MultiLockLeaseSetWhoseReplyIsLostIsToldBeforeASecondClientTakesIt) {
  const std::string lock_name = unique_name("ml:lost-expiry:");
  redisync::MultiLock lock{{redisync::AnyLock(first.lock(lock_name))}};
  // Stalled (no reset): the lease set is resent after a dropped connection, not after a
  // timeout.
  proxy.drop_reply(member_lease_set(), 1, AfterDrop::stall);
  // Walking lease 2 x 5 s; the lease set on success 2 s, whose reply is lost.
  ASSERT_TRUE(lock.try_lock_for(5000ms, 2000ms));
  ASSERT_EQ(proxy.stats().dropped_replies, 1);
  auto pttl = [&] { return server.command({"PTTL", lock_name}).as_integer(); };
  ASSERT_LE(pttl(), 2000) << "the lease set did not run on the server";
  expect_deadline_not_after_server(first, pttl, "after the member's lease set was lost");

  auto taker = second.lock(lock_name);
  ASSERT_TRUE(taker.try_lock_for(10000ms)) << "the composite's lease never ended";
  expect_told_or_past_deadline(first, "the member lock");
  EXPECT_TRUE(notices.wait_for(1, 5s)) << "the first holder was never told";
  taker.unlock();
}

// Both defects of issue 36 at once: the member is taken by a grant, and its extension is sent
// at once (the walking lease, 2 x 900 ms, is below the 2 s grant lease), before the
// composite's lease set (1.2 s), whose reply is lost. Neither the extension's reply nor the
// lost one may leave a deadline past the server's expiry.
TEST_F(LeaseUpdateLostReply, GrantedMultiLockMemberWhoseLeaseSetIsLostIsToldBeforeItExpires) {
  const std::string lock_name = unique_name("ml:granted-lost-expiry:");
  auto granted_cfg = lease_update_lossy_config(proxy.url());
  granted_cfg.handoff = redisync::Handoff::grant;
  LostNotices granted_notices;
  redisync::Client granted{granted_cfg};
  granted_notices.attach(granted);
  auto holder_cfg = config_for(server);
  holder_cfg.handoff = redisync::Handoff::grant;
  redisync::Client holder{holder_cfg};

  std::promise<void> held;
  auto release = std::async(std::launch::async, [&] {
    auto lock = holder.lock(lock_name);
    lock.lock();
    held.set_value();
    const bool waiting = redisync::test::wait_until(
        [&] {
          return server.command({"ZCARD", "redisync_lock_grant:{" + lock_name + "}"})
                     .as_integer() > 0;
        },
        5s);
    lock.unlock();
    return waiting;
  });
  held.get_future().wait();

  redisync::MultiLock lock{{redisync::AnyLock(granted.lock(lock_name))}};
  proxy.drop_reply(member_lease_set(), 1, AfterDrop::stall);
  ASSERT_TRUE(lock.try_lock_for(900ms, 1200ms));
  ASSERT_TRUE(release.get()) << "the walk never registered for a grant";
  ASSERT_EQ(proxy.stats().dropped_replies, 1);
  auto pttl = [&] { return server.command({"PTTL", lock_name}).as_integer(); };
  ASSERT_LE(pttl(), 1200) << "the lease set did not run on the server";
  expect_deadline_not_after_server(granted, pttl, "after the granted member's lease set was lost");

  auto taker = second.lock(lock_name);
  ASSERT_TRUE(taker.try_lock_for(10000ms)) << "the composite's lease never ended";
  expect_told_or_past_deadline(granted, "the granted member lock");
  EXPECT_TRUE(granted_notices.wait_for(1, 5s)) << "the granted holder was never told";
  taker.unlock();
}
