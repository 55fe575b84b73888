// SPDX-License-Identifier: Apache-2.0
// Issue 17 item 2: in a Redis Cluster a name such as "a{", "{}" or "x{y" put a primitive's keys
// and channels in different slots: the lock was taken, and every release then failed with
// CROSSSLOT while the watchdog kept renewing it. Such names are now refused with
// InvalidArgument before anything is written, for every kind; brace names whose keys share a
// slot keep working.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "redisync/redisync.h"
#include "support/redis_cluster.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisCluster;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

const std::vector<std::string> kSplitting{"a{", "{}", "x{y", "a}b", "}", "{", "x{}y", "{}{a}"};

// Every constructor a name reaches, by kind.
const std::vector<std::pair<std::string, std::function<void(redisync::Client&, const std::string&)>>>
    kMakers{
        {"lock", [](redisync::Client& c, const std::string& n) { c.lock(n); }},
        {"fair", [](redisync::Client& c, const std::string& n) { c.fair_lock(n); }},
        {"fenced", [](redisync::Client& c, const std::string& n) { c.fenced_lock(n); }},
        {"spin", [](redisync::Client& c, const std::string& n) { c.spin_lock(n); }},
        {"rw", [](redisync::Client& c, const std::string& n) { c.read_write_lock(n); }},
        {"semaphore", [](redisync::Client& c, const std::string& n) { c.semaphore(n); }},
        {"pes", [](redisync::Client& c, const std::string& n) { c.permit_expirable_semaphore(n); }},
        {"latch", [](redisync::Client& c, const std::string& n) { c.count_down_latch(n); }},
        {"rate", [](redisync::Client& c, const std::string& n) { c.rate_limiter(n); }},
        {"multi", [](redisync::Client& c, const std::string& n) {
           redisync::MultiLock m{c.lock(n)};
         }},
    };

}  // namespace

TEST(ClusterNames, NamesSplittingSlotsAreRefusedBeforeAnyWriteAndOthersWork) {
  RedisCluster cluster(3);
  ASSERT_TRUE(wait_until([&] { return cluster.healthy(); }, 20s, 100ms));
  auto cfg = redisync::Config::from_url(cluster.url());
  cfg.reconnection_delay_min = 20ms;
  cfg.reconnection_delay_max = 200ms;
  redisync::Client client(cfg);
  for (const auto& name : kSplitting) {
    for (const auto& [kind, make] : kMakers) {
      try {
        make(client, name);
        ADD_FAILURE() << kind << " '" << name << "' accepted on a cluster";
      } catch (const redisync::InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("slot"), std::string::npos) << e.what();
      }
    }
  }
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    if (cluster.node(i).command({"ROLE"}).elements.at(0).as_string() != "master") continue;
    EXPECT_EQ(cluster.node(i).command({"DBSIZE"}).as_integer(), 0) << "node " << i;
  }

  // Brace names whose keys share a slot: every kind takes and releases them.
  for (const std::string base : {"{tag}x", "a{b}", "x}{y}"}) {
    const std::string name = base + unique_name("-");
    auto lock = client.lock(name);
    lock.lock();
    EXPECT_EQ(lock.release().outcome, redisync::ReleaseOutcome::released) << name;
    auto fair = client.fair_lock(name + "f");
    fair.lock();
    EXPECT_EQ(fair.release().outcome, redisync::ReleaseOutcome::released) << name;
    auto fenced = client.fenced_lock(name + "t");
    fenced.lock_and_get_token();
    EXPECT_EQ(fenced.release().outcome, redisync::ReleaseOutcome::released) << name;
    auto spin = client.spin_lock(name + "s");
    spin.lock();
    EXPECT_EQ(spin.release().outcome, redisync::ReleaseOutcome::released) << name;
    auto rw = client.read_write_lock(name + "rw");
    rw.lock_shared();
    EXPECT_EQ(rw.read_lock().release().outcome, redisync::ReleaseOutcome::released) << name;
    rw.lock();
    EXPECT_EQ(rw.write_lock().release().outcome, redisync::ReleaseOutcome::released) << name;
    auto sem = client.semaphore(name + "sem");
    sem.try_set_permits(1);
    EXPECT_TRUE(sem.try_acquire());
    sem.release();
    auto pes = client.permit_expirable_semaphore(name + "pes");
    pes.try_set_permits(1);
    const auto id = pes.acquire(5s);
    pes.release(id);
    auto rate = client.rate_limiter(name + "rl");
    ASSERT_TRUE(rate.try_set_rate(redisync::RateType::overall, 2, 60s)) << name;
    EXPECT_TRUE(rate.try_acquire(2)) << name;
    rate.release();
    EXPECT_EQ(rate.available_permits(), 1) << name;
    EXPECT_TRUE(rate.remove()) << name;
    // The latch's channel braces the name whatever it holds (docs/wire-format.md §9): no braces at all.
    EXPECT_THROW(client.count_down_latch(name + "latch"), redisync::InvalidArgument);
  }
  auto latch = client.count_down_latch(unique_name("latch-"));
  latch.try_set_count(1);
  latch.count_down();
  EXPECT_TRUE(latch.wait_for(1s));
}
