// SPDX-License-Identifier: Apache-2.0
// Cluster key slots (CRC16 XMODEM + hash tags), routing keys, slot-map and redirect parsing,
// and the watchdog's per-slot grouping. Expected slots were taken from CLUSTER KEYSLOT of a
// redis-server 7.0.
#include <gtest/gtest.h>

#include "net/cluster_map.h"
#include "net/cluster_slot.h"
#include "redisync/errors.h"
#include "sync/hold/watchdog.h"

using redisync::Reply;
using namespace redisync::net;

namespace {

Reply str(const std::string& s) {
  Reply r;
  r.kind = Reply::Kind::string;
  r.str = s;
  return r;
}
Reply num(long long v) {
  Reply r;
  r.kind = Reply::Kind::integer;
  r.integer = v;
  return r;
}
Reply arr(std::vector<Reply> e) {
  Reply r;
  r.kind = Reply::Kind::array;
  r.elements = std::move(e);
  return r;
}

}  // namespace

TEST(ClusterSlot, Crc16XmodemCheckValue) {
  EXPECT_EQ(crc16("123456789"), 0x31C3);
  EXPECT_EQ(crc16(""), 0);
}

TEST(ClusterSlot, KnownSlots) {
  EXPECT_EQ(key_slot("123456789"), 12739);
  EXPECT_EQ(key_slot("foo"), 12182);
  EXPECT_EQ(key_slot(""), 0);
  EXPECT_EQ(key_slot("user1000"), 3443);
  EXPECT_EQ(key_slot("{user1000}.following"), 3443);
  EXPECT_EQ(key_slot("{user1000}.followers"), 3443);
  EXPECT_EQ(key_slot("orders:42"), 11414);
  EXPECT_EQ(key_slot("redisson_lock__channel:{orders:42}"), 11414);
}

TEST(ClusterSlot, HashTagRule) {
  EXPECT_EQ(key_slot("foo{}{bar}"), 8363);     // empty first tag: the whole key
  EXPECT_EQ(key_slot("foo{{bar}}zap"), 4015);  // tag "{bar"
  EXPECT_EQ(key_slot("{bar"), 4015);           // no closing brace: the whole key
  EXPECT_EQ(key_slot("foo{bar}{zap}"), 5061);  // first tag only
  EXPECT_EQ(key_slot("bar"), 5061);
  EXPECT_EQ(hash_tag_of("a{b}c"), "b");
  EXPECT_EQ(hash_tag_of("a{}c"), "a{}c");
}

TEST(ClusterSlot, RoutingKeys) {
  // `key` views into the arguments: they must outlive it (no temporaries).
  std::string_view key;
  const std::vector<std::string> get{"GET", "k"};
  ASSERT_TRUE(routing_key(get, key));
  EXPECT_EQ(key, "k");
  const std::vector<std::string> evalsha{"EVALSHA", "sha", "2", "first", "second", "arg"};
  ASSERT_TRUE(routing_key(evalsha, key));
  EXPECT_EQ(key, "first");
  EXPECT_FALSE(routing_key({"EVALSHA", "sha", "0", "arg"}, key));
  EXPECT_FALSE(routing_key({"INFO", "replication"}, key));
  EXPECT_FALSE(routing_key({"wait", "1", "1000"}, key));
  EXPECT_FALSE(routing_key({"PING"}, key));
  const std::vector<std::string> spublish{"SPUBLISH", "chan", "0"};
  ASSERT_TRUE(routing_key(spublish, key));
  EXPECT_EQ(key, "chan");
}

TEST(ClusterMap, ParsesClusterShards) {
  auto node = [](const std::string& ip, long long port, const std::string& role,
                 const std::string& health) {
    return arr({str("id"), str("abc"), str("port"), num(port), str("ip"), str(ip),
                str("endpoint"), str(ip), str("role"), str(role), str("health"), str(health)});
  };
  Reply shards = arr({
      arr({str("slots"), arr({num(0), num(5460)}), str("nodes"),
           arr({node("10.0.0.1", 7000, "master", "online"),
                node("10.0.0.2", 7003, "replica", "online")})}),
      arr({str("slots"), arr({num(5461), num(10922), num(16000), num(16383)}), str("nodes"),
           arr({node("", 7001, "master", "online"), node("10.0.0.3", 7004, "replica", "fail")})}),
      arr({str("slots"), arr({}), str("nodes"), arr({node("10.0.0.9", 7009, "master", "online")})}),
  });
  const SlotMap map = parse_cluster_shards(shards, "seed.local");
  ASSERT_EQ(map.masters.size(), 2u);
  EXPECT_EQ(map.masters[0].address(), "10.0.0.1:7000");
  EXPECT_EQ(map.masters[0].replicas, 1);
  EXPECT_EQ(map.masters[1].address(), "seed.local:7001");  // empty ip: the node we asked
  EXPECT_EQ(map.masters[1].replicas, 0);                    // its replica is failing
  ASSERT_EQ(map.ranges.size(), 3u);
  EXPECT_EQ(map.ranges[2].first, 16000);
  EXPECT_EQ(map.ranges[2].last, 16383);
  EXPECT_EQ(map.ranges[2].master, 1u);
}

TEST(ClusterMap, ParsesClusterSlots) {
  Reply slots = arr({
      arr({num(0), num(8191), arr({str("127.0.0.1"), num(7000), str("id1")}),
           arr({str("127.0.0.1"), num(7003), str("id4")})}),
      arr({num(8192), num(16383), arr({str(""), num(7001), str("id2")})}),
  });
  const SlotMap map = parse_cluster_slots(slots, "h");
  ASSERT_EQ(map.masters.size(), 2u);
  EXPECT_EQ(map.masters[0].replicas, 1);
  EXPECT_EQ(map.masters[1].address(), "h:7001");
  EXPECT_EQ(map.ranges[1].first, 8192);
}

TEST(ClusterMap, MalformedRepliesThrow) {
  EXPECT_THROW(parse_cluster_slots(str("nope"), "h"), redisync::ProtocolError);
  EXPECT_THROW(parse_cluster_slots(arr({arr({num(0), num(99999), arr({str("h"), num(1)})})}), "h"),
               redisync::ProtocolError);
  EXPECT_THROW(parse_cluster_shards(arr({arr({str("slots")})}), "h"), redisync::ProtocolError);
}

TEST(ClusterMap, ParsesRedirects) {
  bool ask = true;
  int slot = -1;
  std::string host;
  std::uint16_t port = 0;
  ASSERT_TRUE(parse_redirect("MOVED 3999 127.0.0.1:6381", ask, slot, host, port));
  EXPECT_FALSE(ask);
  EXPECT_EQ(slot, 3999);
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_EQ(port, 6381);
  ASSERT_TRUE(parse_redirect("ASK 1 [::1]:7000", ask, slot, host, port));
  EXPECT_TRUE(ask);
  EXPECT_EQ(host, "::1");
  ASSERT_TRUE(parse_redirect("MOVED 2 :7002", ask, slot, host, port));
  EXPECT_EQ(host, "");  // same host as the node that answered
  EXPECT_FALSE(parse_redirect("ERR wrong", ask, slot, host, port));
  EXPECT_FALSE(parse_redirect("MOVED 16384 h:1", ask, slot, host, port));
  EXPECT_FALSE(parse_redirect("MOVED 1 h:0", ask, slot, host, port));
  EXPECT_FALSE(parse_redirect("MOVED 1 nohostport", ask, slot, host, port));
}

TEST(WatchdogSlots, BatchesNeverMixSlots) {
  using redisync::sync::RenewalKey;
  std::vector<RenewalKey> regs;
  for (int i = 0; i < 50; ++i) regs.push_back({"lock:" + std::to_string(i), "f"});
  regs.push_back({"{user1000}.a", "f"});
  regs.push_back({"{user1000}.b", "f"});
  const auto groups = redisync::sync::group_by_slot(regs);
  std::size_t total = 0;
  for (const auto& g : groups) {
    ASSERT_FALSE(g.empty());
    for (const auto& r : g) EXPECT_EQ(key_slot(r.key), key_slot(g.front().key));
    total += g.size();
  }
  EXPECT_EQ(total, regs.size());
  // The two tagged keys share a group.
  bool together = false;
  for (const auto& g : groups) together |= g.size() >= 2 && key_slot(g.front().key) == 3443;
  EXPECT_TRUE(together);
}
