// SPDX-License-Identifier: Apache-2.0
// Issue 36 defect 2: a MultiLock / RedLock member taken by a grant (Config::handoff = grant).
// A granted hold starts on the releaser's short grant lease; its own extension (grant_extend)
// used to be sent a third of the grant lease later, after the composite had set every
// member's lease to the caller's: it overwrote that member's lease with the walking lease
// (2 x wait). The member then outlived the composite's lease (a crashed holder kept it for
// seconds more) or expired early under a live holder. Now the composite's lease set takes the
// pending extension's place (it carries the composite's lease and ends the grant), and an
// extension already sent never moves the local deadline past the composite's.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "grant_util.h"
#include "redisync/redisync.h"
#include "support/lost_notices.h"
#include "support/redis_server.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;
using redisync::test::grant::grant_config;
using redisync::test::grant::lock_registrations;

namespace {

struct CompositeGrantCase {
  bool red_lock;                   // RedLock over three servers, else MultiLock of two locks
  std::chrono::milliseconds wait;  // the walking lease is 2 x wait
  std::chrono::milliseconds lease;  // the composite's lease
  const char* label;
};

void PrintTo(const CompositeGrantCase& c, std::ostream* os) {
  *os << (c.red_lock ? "RedLock" : "MultiLock") << " wait " << c.wait.count() << " ms, lease "
      << c.lease.count() << " ms";
}

std::string composite_grant_case_name(const ::testing::TestParamInfo<CompositeGrantCase>& p) {
  return std::string(p.param.red_lock ? "RedLock_" : "MultiLock_") + p.param.label;
}

class CompositeGrantMember : public ::testing::TestWithParam<CompositeGrantCase> {
 protected:
  void SetUp() override {
    const auto& c = GetParam();
    const int n = c.red_lock ? 3 : 1;
    for (int i = 0; i < n; ++i) {
      servers.push_back(std::make_unique<RedisServer>());
      ours.push_back(std::make_unique<redisync::Client>(grant_config(*servers.back())));
      notices.push_back(std::make_unique<redisync::test::LostNotices>());
      notices.back()->attach(*ours.back());
    }
    holder = std::make_unique<redisync::Client>(grant_config(*servers.front()));
    const std::string name = unique_name("composite-grant:");
    if (c.red_lock) {
      for (int i = 0; i < n; ++i) keys.push_back({i, name});
    } else {
      keys.push_back({0, name + ":a"});
      keys.push_back({0, name + ":b"});
    }
  }

  std::vector<redisync::AnyLock> members() {
    std::vector<redisync::AnyLock> m;
    for (const auto& [i, key] : keys) m.emplace_back(ours[i]->lock(key));
    return m;
  }

  long long pttl(std::size_t k) {
    return servers[keys[k].first]->command({"PTTL", keys[k].second}).as_integer();
  }

  // Every member's key ends within the composite's lease and with the others (they were all
  // set together); every client's local deadline comes no later than its keys' expiry.
  void check_members(const std::string& step) {
    const auto lease = GetParam().lease.count();
    std::vector<long long> ttls;
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const auto deadline = ours[keys[k].first]->lease_deadline();
      const long long ttl = pttl(k);
      const auto after = std::chrono::steady_clock::now();
      ttls.push_back(ttl);
      ASSERT_GT(ttl, 0) << step << ": member " << k << " is gone under a live holder";
      EXPECT_LE(ttl, lease) << step << ": member " << k << " (" << keys[k].second
                            << ") outlives the composite's lease";
      ASSERT_TRUE(deadline.has_value()) << step << ": member " << k << " has no local deadline";
      EXPECT_LE(*deadline, after + std::chrono::milliseconds(ttl))
          << step << ": member " << k << "'s local deadline is "
          << std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - after).count()
          << " ms ahead, the server's expiry " << ttl << " ms";
    }
    const auto [lo, hi] = std::minmax_element(ttls.begin(), ttls.end());
    EXPECT_LE(*hi - *lo, 500) << step << ": the members' leases differ by " << (*hi - *lo)
                              << " ms; the granted member's is " << ttls.front() << " ms";
  }

  std::vector<std::unique_ptr<RedisServer>> servers;
  std::vector<std::unique_ptr<redisync::test::LostNotices>> notices;  // of `ours`, outlive them
  std::vector<std::unique_ptr<redisync::Client>> ours;  // one per server
  std::unique_ptr<redisync::Client> holder;             // holds member 0 first
  std::vector<std::pair<int, std::string>> keys;        // each member's server and key
};

}  // namespace

TEST_P(CompositeGrantMember, GrantedMemberEndsWithTheCompositesLease) {
  const auto& c = GetParam();
  const std::string granted_key = keys.front().second;
  RedisServer& granted_server = *servers.front();
  // The holder takes member 0 and releases it once our walk waits for it: a grant.
  std::promise<void> held;
  auto release = std::async(std::launch::async, [&] {
    auto lock = holder->lock(granted_key);
    lock.lock();
    held.set_value();
    const bool waiting = wait_until(
        [&] {
          return granted_server.command({"ZCARD", lock_registrations(granted_key)}).as_integer() >
                 0;
        },
        5s);
    lock.unlock();
    return waiting;
  });
  held.get_future().wait();

  std::unique_ptr<redisync::MultiLock> composite =
      c.red_lock ? std::make_unique<redisync::RedLock>(members())
                 : std::make_unique<redisync::MultiLock>(members());
  ASSERT_TRUE(composite->try_lock_for(c.wait, c.lease));
  ASSERT_TRUE(release.get()) << "the walk never registered for a grant of member 0";
  check_members("right after the acquire");

  // Past the time the grant's own extension was due (a third of the 2 s grant lease after the
  // walk registered): it must not have changed any lease.
  std::this_thread::sleep_for(1000ms);
  check_members("after the grant's extension was due");

  // The holder stops (no release): every member ends by the composite's lease; the granted
  // one no later than the last of the others.
  ASSERT_TRUE(wait_until(
      [&] {
        for (std::size_t k = 1; k < keys.size(); ++k) {
          if (pttl(k) != -2) return false;
        }
        return true;
      },
      c.lease + 2000ms));
  EXPECT_LE(pttl(0), 300) << "the granted member outlives the others after the holder stopped";
  // Each member's holder was told as its lease ended (the MultiLock's client holds both).
  const std::size_t per_client = c.red_lock ? 1 : keys.size();
  for (std::size_t i = 0; i < notices.size(); ++i) {
    EXPECT_TRUE(notices[i]->wait_for(per_client, 2s)) << "client " << i << " was not told";
  }
}

// Walking lease 6 s, longer than the 2 s grant lease: the extension was due after the lease
// set. Short: the composite's lease (3 s) is below the walking lease; long: above it (10 s).
// Sent at once: the walking lease (1 s) is below the grant lease, so the extension went out
// before the composite's lease set.
INSTANTIATE_TEST_SUITE_P(
    Cases, CompositeGrantMember,
    ::testing::Values(CompositeGrantCase{false, 3000ms, 3000ms, "short"},
                      CompositeGrantCase{false, 1000ms, 10000ms, "long"},
                      CompositeGrantCase{false, 500ms, 5000ms, "extension_first"},
                      CompositeGrantCase{true, 3000ms, 3000ms, "short"},
                      CompositeGrantCase{true, 1000ms, 10000ms, "long"},
                      CompositeGrantCase{true, 500ms, 5000ms, "extension_first"}),
    composite_grant_case_name);
