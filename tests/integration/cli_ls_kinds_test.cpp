// SPDX-License-Identifier: Apache-2.0
// `redisync ls` rows of the kinds cli_ls_test.cpp leaves out, each created with the library
// against a real server: the rate limiter (its available permits as the acquire step counts
// them, its rate), the spin lock (a lock's layout: kind lock, its holder) and the count-down
// latch (a plain count), in text and --json.
#include <iostream>

#include "cli_support.h"
#include "redisync/client.h"
#include "redisync/count_down_latch.h"
#include "redisync/rate_limiter.h"
#include "redisync/spin_lock.h"

namespace redisync::test {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class CliLsKindsTest : public CliTest {
 protected:
  ProcessResult ls(const std::string& pattern, bool json = false, bool counts = false) {
    std::vector<std::string> args{"ls", "--redis", server_.url()};
    if (json) args.push_back("--json");
    if (counts) args.push_back("--counts");
    args.push_back(pattern);
    return cli(args);
  }
};

// KIND NAME HOLDERS LEASE WAITERS PERMITS DETAIL...
TEST_F(CliLsKindsTest, RateLimiterRowShowsAvailablePermitsAndTheRate) {
  const std::string name = unique_name("cli:lsrate:");
  Client client(server_.url());
  auto limiter = client.rate_limiter(name);
  limiter.set_rate(RateType::overall, 5, std::chrono::hours(1));
  ASSERT_TRUE(limiter.try_acquire_for(2, std::chrono::milliseconds(0)));

  auto r = ls(name);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::cout << "--- redisync ls " << name << "\n" << r.output << "---\n";
  const auto row = row_of(r.output, name);
  ASSERT_GE(row.size(), 7u) << r.output;
  EXPECT_EQ(row[0], "rate-limiter");
  EXPECT_EQ(row[2], "-") << "a rate limiter has no holders";
  EXPECT_EQ(row[3], "none") << "no keep-alive: the limiter does not expire";
  EXPECT_EQ(row[4], "-");
  EXPECT_EQ(row[5], "3") << "5 per hour, 2 taken";
  EXPECT_TRUE(has(r.output, "rate 5/3600s overall")) << r.output;

  r = ls(name, true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "\"kind\":\"rate-limiter\"")) << r.output;
  EXPECT_TRUE(has(r.output, "\"holders\":[]")) << r.output;
  EXPECT_TRUE(has(r.output, "\"permits\":3")) << r.output;
  EXPECT_TRUE(has(r.output, "\"rate\":5")) << r.output;
  EXPECT_TRUE(has(r.output, "\"interval_ms\":3600000")) << r.output;
  EXPECT_TRUE(has(r.output, "\"type\":\"overall\"")) << r.output;
}

TEST_F(CliLsKindsTest, RateLimiterRowCountsPermitsBackOnceTheirGrantsLeaveTheWindow) {
  const std::string name = unique_name("cli:lsratewin:");
  Client client(server_.url());
  auto limiter = client.rate_limiter(name);
  limiter.set_rate(RateType::overall, 4, std::chrono::milliseconds(200));
  ASSERT_TRUE(limiter.try_acquire_for(4, std::chrono::milliseconds(0)));
  // The stored value stays 0 until the next acquire; the grants leave the window after
  // 200 ms, and ls must count their permits as available again (as the acquire step does).
  std::string output;
  EXPECT_TRUE(wait_until(
      [&] {
        output = ls(name).output;
        const auto row = row_of(output, name);
        return row.size() >= 6 && row[5] == "4";
      },
      20s, 100ms))
      << output;
}

TEST_F(CliLsKindsTest, PerClientRateLimiterRowSaysItsWindowsArePerClient) {
  const std::string name = unique_name("cli:lsratepc:");
  Client client(server_.url());
  auto limiter = client.rate_limiter(name);
  limiter.set_rate(RateType::per_client, 3, std::chrono::seconds(10));
  ASSERT_TRUE(limiter.try_acquire());
  const auto r = ls(name);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto row = row_of(r.output, name);
  ASSERT_GE(row.size(), 7u) << r.output;
  EXPECT_EQ(row[0], "rate-limiter");
  EXPECT_EQ(row[5], "-") << "one window per client: no single count (see redisync status)";
  EXPECT_TRUE(has(r.output, "rate 3/10s per-client")) << r.output;
}

TEST_F(CliLsKindsTest, SpinLockRowIsALockWithItsHolder) {
  const std::string name = unique_name("cli:lsspin:");
  Client client(server_.url());
  auto spin = client.spin_lock(name);
  spin.lock();
  const std::string owner = spin.owner_field(Client::current_thread_id());

  auto r = ls(name);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::cout << "--- redisync ls " << name << "\n" << r.output << "---\n";
  const auto row = row_of(r.output, name);
  ASSERT_GE(row.size(), 6u) << r.output;
  EXPECT_EQ(row[0], "ambiguous") << "a spin lock has a lock's layout: " << r.output;
  EXPECT_TRUE(has(r.output, "lock or fair-lock")) << r.output;
  EXPECT_EQ(row[2], "1");
  EXPECT_TRUE(has(row[3], owner.substr(0, 8))) << "the holder, shortened: " << r.output;
  EXPECT_TRUE(row[4].ends_with("s")) << "the watchdog lease: " << r.output;

  r = ls(name, true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "\"kind\":\"ambiguous\",\"candidates\":[\"lock\",\"fair-lock\"]"))
      << r.output;
  EXPECT_TRUE(has(r.output, "\"holders\":[\"" + owner + "\"]")) << r.output;
  spin.unlock();

  r = ls(name);
  EXPECT_EQ(r.output, "") << "released: the key is gone";
}

TEST_F(CliLsKindsTest, LatchRowShowsItsCount) {
  const std::string name = unique_name("cli:lslatch:");
  Client client(server_.url());
  auto latch = client.count_down_latch(name);
  ASSERT_TRUE(latch.try_set_count(3));
  latch.count_down();

  auto r = ls(name);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "") << "a count alone may be anybody's number: listed with --counts";
  r = ls(name, false, true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::cout << "--- redisync ls --counts " << name << "\n" << r.output << "---\n";
  const auto row = row_of(r.output, name);
  ASSERT_GE(row.size(), 6u) << r.output;
  EXPECT_EQ(row[0], "ambiguous") << "a latch's count and a semaphore's permits look the same";
  EXPECT_EQ(row[2], "-");
  EXPECT_EQ(row[5], "2") << "3 counted down once";
  EXPECT_TRUE(has(r.output, "latch")) << "the detail says it may be a latch: " << r.output;

  r = ls(name, true, true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "\"kind\":\"ambiguous\"")) << r.output;
  EXPECT_TRUE(has(r.output, "\"may_be_data\":true")) << r.output;
  EXPECT_TRUE(has(r.output, "\"permits\":2")) << r.output;

  latch.count_down(2);
  r = ls(name);
  EXPECT_EQ(r.output, "") << "open: a latch at 0 has no key";
}

}  // namespace
}  // namespace redisync::test
