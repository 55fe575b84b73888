// SPDX-License-Identifier: Apache-2.0
// Durations on the command line (tools/redisync/common/duration.h): units, decimals and compound
// forms; a bare number needs a unit; hostile text is a usage error naming the flag.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_error.h"
#include "duration.h"

namespace redisync::cli {
namespace {

// The message of the usage error `text` gets, or a test failure if it is accepted.
std::string refusal(const std::string& text, const std::string& flag = "--wait") {
  try {
    const Duration d = parse_duration_flag(text, flag);
    ADD_FAILURE() << "'" << text << "' was accepted as " << d.count() << " ms";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    return e.what();
  }
  return {};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CliDurationWordsTest, AcceptsUnitsDecimalsAndCompounds) {
  EXPECT_EQ(parse_duration_flag("250ms", "--wait"), Duration{250});
  EXPECT_EQ(parse_duration_flag("1.5s", "--wait"), Duration{1500});
  EXPECT_EQ(parse_duration_flag("0.25s", "--wait"), Duration{250});
  EXPECT_EQ(parse_duration_flag("2m", "--wait"), Duration{120'000});
  EXPECT_EQ(parse_duration_flag("1.5m", "--wait"), Duration{90'000});
  EXPECT_EQ(parse_duration_flag("1h", "--wait"), Duration{3'600'000});
  EXPECT_EQ(parse_duration_flag("1m30s", "--wait"), Duration{90'000});
  EXPECT_EQ(parse_duration_flag("1h2m3.5s", "--wait"), Duration{3'723'500});
  EXPECT_EQ(parse_duration_flag("1s500ms", "--wait"), Duration{1500});
  EXPECT_EQ(parse_duration_flag("2h30m", "--wait"), Duration{9'000'000});
  EXPECT_EQ(parse_duration_flag("1.500s", "--wait"), Duration{1500});
  EXPECT_EQ(parse_duration_flag("0s", "--wait"), Duration{0});
  // Zero is zero in any unit: `--wait 0` (one try) stays as it was.
  EXPECT_EQ(parse_duration_flag("0", "--wait"), Duration{0});
}

TEST(CliDurationWordsTest, BareNumberNeedsAUnit) {
  EXPECT_EQ(refusal("10"), "--wait 10: give a unit, e.g. 10s or 10ms");
  EXPECT_EQ(refusal("1500", "--lease"), "--lease 1500: give a unit, e.g. 1500s or 1500ms");
  EXPECT_TRUE(contains(refusal("1.5"), "give a unit, e.g. 1.5s")) << refusal("1.5");
  EXPECT_TRUE(contains(refusal("1m30"), "give 30 a unit, e.g. 1m30s")) << refusal("1m30");
}

TEST(CliDurationWordsTest, RefusesHostileTextNamingTheFlag) {
  // clang-format off
  const std::vector<std::string> hostile = {
      "-1s", "+5s", "99999999999h", "9223372036854775808ms", "99999999999999999999s",
      "2562048h", "nan", "inf", "1e3s", "", " 5s", "5s ", "5 s", "5s junk", "5x", "5S", "5sec",
      "s", "ms", "1s1s", "30s1m", "1ms1s", "1m1h", "1.s", ".5s", "1..5s", "1.2.3s", "1.5ms",
      "0.0001s", "0.00000000001h", "5\n", "1us", "5s\x1b[2J"};
  // clang-format on
  for (const std::string& text : hostile) {
    const std::string why = refusal(text, "--lease");
    EXPECT_EQ(why.rfind("--lease ", 0), 0U) << "'" << text << "': " << why;
    EXPECT_EQ(why.find('\x1b'), std::string::npos) << why;  // shown escaped, not raw
  }
  EXPECT_TRUE(contains(refusal("99999999999h"), "too large")) << refusal("99999999999h");
  EXPECT_TRUE(contains(refusal("1s1s"), "largest to smallest")) << refusal("1s1s");
  EXPECT_TRUE(contains(refusal("30s1m"), "largest to smallest")) << refusal("30s1m");
  EXPECT_TRUE(contains(refusal("1.5ms"), "whole number of milliseconds")) << refusal("1.5ms");
  EXPECT_TRUE(contains(refusal("5x"), "unknown unit 'x'")) << refusal("5x");
  EXPECT_TRUE(contains(refusal(""), "empty")) << refusal("");
}

}  // namespace
}  // namespace redisync::cli
