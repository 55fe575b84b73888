// SPDX-License-Identifier: Apache-2.0
// Issue 17 item 8 (review): the permit-expirable semaphore's scripts read the count N with
// Lua's tonumber, which takes "0x10", " 5" and "1e3" for numbers, so a step went on and wrote
// (reclaimed an expired permit, i.e. removed it from the set) before Redis's INCRBY refused
// the value: a partial write, and an error that did not say what was wrong. Every step now
// refuses a count that is not a whole decimal integer before anything is written, naming it,
// as sync/counters/counts.h does for the counts the client reads.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::config_for;
using redisync::test::unique_name;

TEST(PermitStrictCount, MalformedCountIsRefusedBeforeAnyWrite) {
  RedisServer server;
  redisync::Client client(config_for(server));
  auto pes = client.permit_expirable_semaphore(unique_name("pes:"));
  const std::string zset = "{" + pes.name() + "}:timeout";
  const std::string expired(16, 'x');  // waits to be reclaimed: the first write of most steps
  const std::string held_hex(32, 'a');
  const std::string held(16, '\xaa');
  const std::vector<std::pair<std::string, std::function<void()>>> steps{
      {"try_acquire", [&] { (void)pes.try_acquire(); }},
      {"try_acquire_for", [&] { (void)pes.try_acquire_for(50ms, 10s); }},
      {"update_lease", [&] { (void)pes.update_lease(held_hex, 10s); }},
      {"remaining_lease", [&] { (void)pes.remaining_lease(held_hex); }},
      {"set_permits", [&] { pes.set_permits(5); }},
      {"add_permits", [&] { pes.add_permits(1); }},
      {"add_permits negative", [&] { pes.add_permits(-1); }},
      {"release", [&] { pes.release(held_hex); }},
      {"release several", [&] { pes.release(std::vector<std::string>{held_hex}); }},
      {"available_permits", [&] { (void)pes.available_permits(); }},
  };
  for (const std::string bad : {"0x10", " 5", "1e3", "5 ", "abc", "-", "99999999999999999999"}) {
    for (const auto& [label, step] : steps) {
      const std::string what = label + " with N = '" + bad + "'";
      server.command({"SET", pes.name(), bad});
      server.command({"DEL", zset});
      server.command({"ZADD", zset, "1", expired});
      server.command({"ZADD", zset, "922337203685477", held});
      try {
        step();
        ADD_FAILURE() << what << ": accepted";
      } catch (const redisync::ServerError& e) {
        EXPECT_NE(std::string(e.what()).find("not a count"), std::string::npos)
            << what << ": " << e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << what << ": not a ServerError: " << e.what();
      }
      EXPECT_EQ(server.command({"GET", pes.name()}).as_string(), bad) << what;
      EXPECT_EQ(server.command({"ZCARD", zset}).as_integer(), 2) << what << ": set changed";
      EXPECT_FALSE(server.command({"ZSCORE", zset, expired}).is_nil())
          << what << ": reclaimed before failing";
    }
  }
  // A well-formed count still works (and "-3" is one: counts may be negative).
  server.command({"DEL", zset});
  server.command({"SET", pes.name(), "-3"});
  EXPECT_EQ(pes.available_permits(), -3);
  pes.add_permits(4);
  EXPECT_TRUE(pes.try_acquire().has_value());
}

// Issue 36 item 6: the API took counts up to 2^53 - 1, but the scripts keep a count of at most
// 15 digits: set_permits(10^15) was written, and from then on every step (of every client,
// Java's aside) refused the semaphore as "not a count". One limit now,
// PermitExpirableSemaphore::kMaxCount, for the count given and for the count (available, and
// available + held) a step would leave; a call beyond it is refused with InvalidArgument
// naming the value and the limit, before anything is written, and the semaphore still works.
TEST(PermitStrictCount, CountsBeyondTheScriptsLimitAreRefusedBeforeAnyWrite) {
  RedisServer server;
  redisync::Client client(config_for(server));
  constexpr std::int64_t limit = redisync::PermitExpirableSemaphore::kMaxCount;
  ASSERT_EQ(limit, 999'999'999'999'999);
  auto pes = client.permit_expirable_semaphore(unique_name("pes:"));
  const std::string zset = "{" + pes.name() + "}:timeout";
  auto dump = [&] {
    std::string out;
    for (const auto& key : {pes.name(), zset}) {
      const auto r = server.command({"DUMP", key});
      out += r.is_nil() ? std::string("(absent)") : r.as_string();
      out += '|';
    }
    return out;
  };
  // `call` must be refused with InvalidArgument naming `value` and the limit `bound`, and
  // write nothing.
  auto refused_by = [&](const std::string& bound, const std::string& label,
                        const std::string& value, auto call) {
    const std::string before = dump();
    try {
      call();
      ADD_FAILURE() << label << ": accepted";
    } catch (const redisync::InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(value), std::string::npos) << label << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(bound), std::string::npos) << label << ": " << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << label << ": not InvalidArgument: " << e.what();
    }
    EXPECT_EQ(dump(), before) << label << ": wrote";
    // Still a working semaphore.
    EXPECT_NO_THROW((void)pes.available_permits()) << label;
  };
  auto refused = [&](const std::string& label, const std::string& value, auto call) {
    refused_by(std::to_string(limit), label, value, call);
  };
  const std::string over = std::to_string(limit + 1);

  refused("try_set_permits(limit + 1)", over, [&] { (void)pes.try_set_permits(limit + 1); });
  refused("try_set_permits(2^53 - 1)", "9007199254740991",
          [&] { (void)pes.try_set_permits((std::int64_t{1} << 53) - 1); });
  EXPECT_TRUE(pes.try_set_permits(limit));
  EXPECT_EQ(pes.available_permits(), limit);

  refused("set_permits(limit + 1)", over, [&] { pes.set_permits(limit + 1); });
  pes.set_permits(limit);
  EXPECT_EQ(pes.available_permits(), limit);

  // At the limit: one more, given or made by adding, is refused.
  refused("add_permits(1) at the limit", over, [&] { pes.add_permits(1); });
  refused("add_permits(limit + 1)", over, [&] { pes.add_permits(limit + 1); });
  pes.set_permits(0);
  pes.add_permits(limit);
  EXPECT_EQ(pes.available_permits(), limit);
  pes.set_permits(0);
  pes.add_permits(-limit);
  EXPECT_EQ(pes.available_permits(), -limit);
  refused("add_permits(-1) at minus the limit", "-" + over, [&] { pes.add_permits(-1); });
  pes.set_permits(0);
  refused("add_permits(-(limit + 1))", "-" + over, [&] { pes.add_permits(-(limit + 1)); });

  // The total counts the held permits: with one held, the available count may reach only
  // limit - 1 (its release would make limit + 1 available otherwise).
  pes.set_permits(1);
  const auto id = pes.try_acquire_for(0ms, 60s);
  ASSERT_TRUE(id.has_value());
  refused("add_permits(limit) with one held", over, [&] { pes.add_permits(limit); });
  pes.add_permits(limit - 1);
  pes.release(*id);
  EXPECT_EQ(pes.available_permits(), limit);

  // Acquire: its own bound, below the limit, checked before any write as well.
  constexpr auto per_acquire = redisync::PermitExpirableSemaphore::kMaxPermitsPerAcquire;
  refused_by(std::to_string(per_acquire), "acquire(kMaxPermitsPerAcquire + 1)",
             std::to_string(per_acquire + 1),
             [&] { (void)pes.try_acquire_for(per_acquire + 1, 0ms, 60s); });
  EXPECT_TRUE(pes.try_acquire_for(0ms, 60s).has_value());
}
