// SPDX-License-Identifier: Apache-2.0
// Issue 17 item 3 for PermitExpirableSemaphore permits with leases: a permit's lease is a
// promise like a lock's, and its holder used to learn that it had run out only when a later
// release failed (if ever). Each permit taken with a lease now has a local deadline (send time
// of the acquire, or of the last update_lease, + lease - a tenth of the lease); when it passes
// before the release, the lost-lock handler is told (the semaphore's name and the permit id),
// and a later release says the permit was lost rather than "unknown".
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "redisync/redisync.h"
#include "support/java_layout.h"
#include "support/lost_notices.h"
#include "support/redis_server.h"
#include "support/server_stats.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::LostNotices;
using redisync::test::RedisServer;
using redisync::test::config_for;
using redisync::test::server_now_ms;
using redisync::test::unique_name;

TEST(PermitLostNotice, LeaseRunsOutUnreleasedHolderIsToldWithThePermitId) {
  RedisServer server;
  redisync::Client client(config_for(server));
  LostNotices notices;
  notices.attach(client);
  auto pes = client.permit_expirable_semaphore(unique_name("pes:"));
  ASSERT_TRUE(pes.try_set_permits(2));

  // Released in time: never reported.
  const std::string released = pes.acquire(300ms);
  pes.release(released);
  // Not released: reported, with its id.
  const std::string kept = pes.acquire(600ms);
  ASSERT_TRUE(notices.wait_for(1, 10s)) << "the holder of an expiring permit was never told";
  const auto events = notices.all();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].name, pes.name());
  EXPECT_EQ(events[0].permit_id, kept);
  EXPECT_EQ(events[0].owner, 0);
  EXPECT_NE(events[0].reason.find("lease"), std::string::npos) << events[0].reason;

  // The later release says what happened, not only "unknown".
  ASSERT_TRUE(redisync::test::wait_until(
      [&] { return pes.available_permits() == 2; }, 10s));  // its lease ended on the server
  try {
    pes.release(kept);
    ADD_FAILURE() << "releasing an expired permit succeeded";
  } catch (const redisync::UnknownPermitError& e) {
    EXPECT_NE(std::string(e.what()).find("lost"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("lost-lock handler"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(pes.try_release(kept));
  EXPECT_EQ(notices.all().size(), 1u);
}

TEST(PermitLostNotice, SilentServerHolderIsToldBeforeTheLeaseEnds) {
  RedisServer server;
  auto cfg = config_for(server);
  cfg.timeout = 3000ms;
  redisync::Client client(cfg);
  LostNotices notices;
  notices.attach(client);
  auto pes = client.permit_expirable_semaphore(unique_name("pes:"));
  ASSERT_TRUE(pes.try_set_permits(1));
  const std::string id = pes.acquire(3000ms);
  server.pause();
  const bool told = notices.wait_for(1, 10s);
  server.resume();
  ASSERT_TRUE(told) << "the holder of a permit on a silent server was never told";
  EXPECT_EQ(notices.all().at(0).permit_id, id);
  // Told before the lease ended on the server: the permit's score is still ahead of its clock.
  const std::string zset = "{" + pes.name() + "}:timeout";
  std::string raw;
  for (std::size_t i = 0; i < id.size(); i += 2) {
    raw.push_back(static_cast<char>(std::stoi(id.substr(i, 2), nullptr, 16)));
  }
  const auto score = server.command({"ZSCORE", zset, raw});
  ASSERT_FALSE(score.is_nil()) << "the lease had already ended on the server when told";
  EXPECT_GT(std::stoll(score.as_string()), server_now_ms(server))
      << "told only after the lease had ended on the server";
}

TEST(PermitLostNotice, UpdatedLeaseMovesTheDeadlineAndNoExpiryEndsIt) {
  RedisServer server;
  redisync::Client client(config_for(server));
  LostNotices notices;
  notices.attach(client);
  auto pes = client.permit_expirable_semaphore(unique_name("pes:"));
  ASSERT_TRUE(pes.try_set_permits(2));
  // A permit given no expiry before its first lease ends is never reported...
  const std::string forever = pes.acquire(400ms);
  ASSERT_TRUE(pes.update_lease(forever, redisync::PermitExpirableSemaphore::no_expiry));
  // ...and one whose lease was shortened is reported by the new lease, named by its id.
  const std::string shortened = pes.acquire(60000ms);
  ASSERT_TRUE(pes.update_lease(shortened, 500ms));
  ASSERT_TRUE(notices.wait_for(1, 10s)) << "a shortened lease was not watched";
  EXPECT_EQ(notices.all().at(0).permit_id, shortened);
  // The no-expiry permit's old deadline (400 ms) has long passed: still no notice of it.
  EXPECT_FALSE(notices.wait_for(2, 300ms));
  pes.release(forever);
  EXPECT_EQ(notices.all().size(), 1u);
}

// Issue 36 item 7: a Java client that extends a redisync permit's lease (Redisson's
// updateLeaseTime) left redisync's deadline where its own acquire had put it: the permit was
// reported lost while the server held it for much longer. Before a notice the server's expiry
// is read now; a longer one moves the deadline (counted from before the server read its
// clock, so never past the server's), and the notice comes when the extended lease ends.
TEST(PermitLostNotice, LeaseExtendedByAJavaClientIsNotReportedLostWhileTheServerHoldsIt) {
  RedisServer server;
  redisync::Client client(config_for(server));
  LostNotices notices;
  notices.attach(client);
  auto pes = client.permit_expirable_semaphore(unique_name("pes:"));
  ASSERT_TRUE(pes.try_set_permits(1));
  const std::string id = pes.acquire(1000ms);  // our deadline: 900 ms from the acquire
  std::string raw;
  for (std::size_t i = 0; i < id.size(); i += 2) {
    raw.push_back(static_cast<char>(std::stoi(id.substr(i, 2), nullptr, 16)));
  }
  redisync::test::JavaLayoutClient java(server);
  ASSERT_EQ(java.permit_update_lease(pes.name(), raw, 4000).as_integer(), 1);
  // Twice our own deadline: the server still holds it, and nobody was told otherwise.
  EXPECT_FALSE(notices.wait_for(1, 1800ms))
      << "reported lost while the server held it: " << notices.all().at(0).reason;
  EXPECT_GT(pes.remaining_lease(id), 1000ms);
  // When the extended lease ends, the holder is told, with the permit's id.
  ASSERT_TRUE(notices.wait_for(1, 10s)) << "the end of the extended lease was never told";
  EXPECT_EQ(notices.all().at(0).permit_id, id);
  ASSERT_TRUE(redisync::test::wait_until([&] { return pes.available_permits() == 1; }, 10s));
  EXPECT_THROW(pes.release(id), redisync::UnknownPermitError);
  EXPECT_EQ(notices.all().size(), 1u);
}
