// SPDX-License-Identifier: Apache-2.0
// Unit tests of the redisync CLI's pure pieces: JSON output, durations, status rendering and
// the demo's statistics (lost updates, overlaps, handoff, recovery).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include "cli_error.h"
#include "demo_report.h"
#include "duration.h"
#include "events.h"
#include "json_writer.h"
#include "names.h"
#include "process.h"
#include "redis_option.h"
#include "status_rate_limiter.h"
#include "status_report.h"
#include "server_numbers.h"

namespace redisync::cli {
namespace {

TEST(CliJsonTest, QuoteEscapesControlAndInvalidUtf8) {
  EXPECT_EQ(json_quote("plain"), "\"plain\"");
  EXPECT_EQ(json_quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(json_quote("\n\t\r\b\f"), "\"\\n\\t\\r\\b\\f\"");
  EXPECT_EQ(json_quote(std::string("\x01\x7f", 2)), "\"\\u0001\\u007f\"");
  EXPECT_EQ(json_quote(std::string("a\0b", 3)), "\"a\\u0000b\"");
  EXPECT_EQ(json_quote("\xc3\xa9\xe2\x82\xac"), "\"\xc3\xa9\xe2\x82\xac\"");  // é € kept
  EXPECT_EQ(json_quote("\xff"), "\"\\u00ff\"");                               // not UTF-8
  EXPECT_EQ(json_quote("\xc3"), "\"\\u00c3\"");                               // truncated
  EXPECT_EQ(json_quote("\xc0\xaf"), "\"\\u00c0\\u00af\"");                    // overlong
  EXPECT_EQ(json_quote("\xed\xa0\x80"), "\"\\u00ed\\u00a0\\u0080\"");         // surrogate
}

TEST(CliJsonTest, WriterNestsAndSeparates) {
  JsonWriter w;
  w.begin_object()
      .field("s", "x")
      .field("n", -3)
      .field("b", true)
      .key("a")
      .begin_array()
      .value(1)
      .begin_object()
      .end_object()
      .null()
      .end_array()
      .key("e")
      .begin_array()
      .end_array()
      .end_object();
  EXPECT_EQ(w.str(), R"({"s":"x","n":-3,"b":true,"a":[1,{},null],"e":[]})");
}

TEST(CliDurationTest, ParsesUnitsAndRejectsJunk) {
  EXPECT_EQ(parse_duration_flag("250ms", "--wait"), Duration{250});
  EXPECT_EQ(parse_duration_flag("30s", "--wait"), Duration{30000});
  EXPECT_EQ(parse_duration_flag("5m", "--wait"), Duration{300000});
  EXPECT_THROW(parse_duration_flag("1500", "--wait"), UsageError);  // a bare number needs a unit
  EXPECT_EQ(parse_duration_flag("0", "--wait"), Duration{0});
  try {
    parse_duration_flag("5x", "--lease");
    FAIL() << "expected a usage error";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    EXPECT_NE(std::string(e.what()).find("--lease"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_duration_flag("-1s", "--wait"), UsageError);
  EXPECT_THROW(parse_duration_flag("", "--wait"), UsageError);
  EXPECT_EQ(format_duration(Duration{850}), "850 ms");
  EXPECT_EQ(format_duration(Duration{2000}), "2 s");
  EXPECT_EQ(format_duration(Duration{1500}), "1.5 s");
}

// Names and fields in text output: one line, no byte that drives a terminal, UTF-8 kept.
TEST(CliPrintable, EscapesControlBytesAndBackslashOnly) {
  EXPECT_EQ(printable("plain name {tag}:1"), "plain name {tag}:1");
  EXPECT_EQ(printable("a\nb\tc\rd\\e"), "a\\nb\\tc\\rd\\\\e");
  EXPECT_EQ(printable(std::string("\x1b[2J\x07\x7f\0x", 8)), "\\x1b[2J\\x07\\x7f\\x00x");
  EXPECT_EQ(printable("\xc2\x9b" "31m"), "\\xc2\\x9b31m");  // U+009B: CSI
  EXPECT_EQ(printable("\xc3\xbc" "ber \xe2\x9c\x93"), "\xc3\xbc" "ber \xe2\x9c\x93");
  EXPECT_EQ(printable("one\ntwo\x1b", true), "one\ntwo\\x1b");
}

// One word of a space-separated row: printable(), and a space as "\x20".
TEST(CliPrintable, WordEscapesSpacesToo) {
  EXPECT_EQ(printable_word("nightly report"), "nightly\\x20report");
  // A name holding a literal "\x20" stays told apart from one holding a space.
  EXPECT_EQ(printable_word("a\\x20b c\n"), "a\\\\x20b\\x20c\\n");
  EXPECT_EQ(printable_word("plain{tag}:1"), "plain{tag}:1");
}

TEST(CliMiscTest, HashTagAndExitCodes) {
  EXPECT_EQ(hash_tag("orders"), "{orders}");
  EXPECT_EQ(hash_tag("a{b}c"), "a{b}c");
  EXPECT_EQ(exit_code_of(7 << 8), 7);  // WIFEXITED, status 7
  EXPECT_EQ(exit_code_of(SIGTERM), 128 + SIGTERM);
  EXPECT_EQ(fds_opened_since({3, 5}, {3, 4, 5, 9}), (std::vector<int>{4, 9}));
  EXPECT_EQ(find_executable("sh").empty(), false);
  EXPECT_EQ(find_executable("no-such-command-xyz"), "");
  EXPECT_EQ(find_executable("./relative"), "./relative");
}

TEST(CliStatusTest, TextIsAlignedAndJsonComplete) {
  StatusReport r;
  r.name = "orders";
  r.type = "hash";
  r.kind = Kind::lock;
  r.state = "held";
  r.holders = {{"uuid:1", 2}};
  r.pttl_ms = 1234;
  r.lock_family = true;
  r.queue = {{"uuid:2", 1000, 50}};
  r.fence_token = "7";
  EXPECT_EQ(render_text(r),
            "name:        orders\n"
            "kind:        lock\n"
            "state:       held\n"
            "holder:      uuid:1 (hold count 2)\n"
            "lease:       1234 ms\n"
            "waiter 1:    uuid:2 (deadline in 50 ms)\n"
            "fence token: 7\n");
  EXPECT_EQ(
      render_json(r),
      R"({"name":"orders","name_hex":"6f7264657273","type":"hash","kind":"lock","state":"held",)"
      R"("holders":[{"owner":"uuid:1","count":2}],"lease_ms":1234,)"
      R"("queue":[{"owner":"uuid:2","deadline_ms":1000,"remaining_ms":50}],"fence_token":"7"})");

  StatusReport sem;
  sem.name = "pool";
  sem.type = "string";
  sem.kind = Kind::permit_expirable_semaphore;
  sem.value = "2";
  sem.permits = 2;
  sem.pttl_ms = -1;
  sem.acquired_permits = {{"00ff", std::nullopt}, {"0a0b", 900}};
  EXPECT_EQ(render_json(sem),
            R"({"name":"pool","name_hex":"706f6f6c","type":"string",)"
            R"("kind":"permit-expirable-semaphore","value":"2",)"
            R"("permits":2,"acquired_permits":[{"id":"00ff","remaining_ms":null},)"
            R"({"id":"0a0b","remaining_ms":900}],"lease_ms":-1})");
}

// Sections one after another: each takes 100 ns to acquire, holds 1000, releases in 100.
std::vector<SectionTimes> back_to_back(std::int64_t start, int n, std::int64_t gap) {
  std::vector<SectionTimes> out;
  for (int i = 0; i < n; ++i) {
    const std::int64_t t1 = start + i * (1200 + gap);
    out.push_back({t1 - 100, t1, t1 + 1000, t1 + 1100});
  }
  return out;
}

// Sections handed over to a waiter: each next acquire is called 500 ns into the previous hold,
// the hold ends with a release call 1000 ns after its acquire returned, and the waiter's acquire
// returns `handoff` ns after that call (the release returns 100 ns after its call).
std::vector<SectionTimes> handed_over(std::int64_t start, int n, std::int64_t handoff) {
  std::vector<SectionTimes> out;
  std::int64_t t1 = start;
  for (int i = 0; i < n; ++i) {
    out.push_back({i == 0 ? t1 - 100 : out.back().t1 + 500, t1, t1 + 1000, t1 + 1100});
    t1 = t1 + 1000 + handoff;
  }
  return out;
}

TEST(CliDemoReportTest, CleanRunHasNoLostUpdates) {
  auto all = handed_over(0, 10, 300);
  WorkerOutcome a{0, 1, {}, false, 0};
  WorkerOutcome b{1, 2, {}, false, 0};
  for (std::size_t i = 0; i < all.size(); ++i) (i % 2 == 0 ? a : b).sections.push_back(all[i]);
  const DemoStats st = analyze_demo({a, b}, 10, std::nullopt);
  EXPECT_EQ(st.sections, 10);
  EXPECT_EQ(st.lost_updates, 0);
  EXPECT_EQ(st.unexplained_increments, 0);
  EXPECT_EQ(st.overlaps, 0);
  ASSERT_TRUE(st.handoff_p50_us);
  EXPECT_DOUBLE_EQ(*st.handoff_p50_us, 0.3);  // t1' - previous t2, not t1' - t3 (0.2)
  EXPECT_FALSE(st.recovery_ms);
  EXPECT_DOUBLE_EQ(st.share_percent[0], 50.0);
}

// A section whose acquire was called after the previous release call never waited for it: its
// gap is not a handoff (with back-to-back sections nobody waits, so there is no figure at all).
TEST(CliDemoReportTest, HandoffCountsOnlyHoldersThatWaited) {
  WorkerOutcome a{0, 1, back_to_back(0, 10, 400), false, 0};
  EXPECT_FALSE(analyze_demo({a}, 10, std::nullopt).handoff_p50_us);

  WorkerOutcome waiter{0, 1, {{0, 100, 1100, 1200}}, false, 0};
  waiter.sections.push_back({600, 1400, 2400, 2500});   // waited from 600: handoff 300 ns
  waiter.sections.push_back({2450, 2600, 3600, 3700});  // called after the 2400 release call
  const DemoStats st = analyze_demo({waiter}, 3, std::nullopt);
  ASSERT_TRUE(st.handoff_p50_us);
  EXPECT_DOUBLE_EQ(*st.handoff_p50_us, 0.3);
  EXPECT_DOUBLE_EQ(*st.handoff_p99_us, 0.3);
}

TEST(CliDemoReportTest, MissingIncrementsAreLostUpdates) {
  WorkerOutcome a{0, 1, back_to_back(0, 10, 400), false, 0};
  const DemoStats st = analyze_demo({a}, 8, std::nullopt);
  EXPECT_EQ(st.lost_updates, 2);
}

TEST(CliDemoReportTest, KilledWorkersUnfinishedSectionMayCountOnce) {
  WorkerOutcome a{0, 1, handed_over(0, 5, 300), false, 0};
  WorkerOutcome killed{1, 2, {}, true, 137};
  const std::int64_t kill = 10'000;
  // The first section after the kill was called before the last release call: without the
  // kill rule its 2 ms gap would count as a handoff.
  auto after = handed_over(kill + 2'000'000, 5, 300);
  after.front().t0 = a.sections.back().t2 - 1;
  for (auto s : after) a.sections.push_back(s);

  DemoStats st = analyze_demo({a, killed}, 10, kill);  // its SET never happened
  EXPECT_EQ(st.lost_updates, 0);
  EXPECT_FALSE(st.in_flight_written);
  EXPECT_EQ(st.unexplained_increments, 0);
  ASSERT_TRUE(st.recovery_ms);
  EXPECT_NEAR(*st.recovery_ms, 2.0, 0.001);
  ASSERT_TRUE(st.handoff_p99_us);
  EXPECT_LT(*st.handoff_p99_us, 1.0);  // the gap across the kill is recovery, not handoff

  st = analyze_demo({a, killed}, 11, kill);  // it wrote before dying
  EXPECT_EQ(st.lost_updates, 0);
  EXPECT_TRUE(st.in_flight_written);
  EXPECT_EQ(st.unexplained_increments, 0);

  st = analyze_demo({a, killed}, 12, kill);
  EXPECT_EQ(st.unexplained_increments, 1);
  st = analyze_demo({a}, 11, std::nullopt);  // no kill: no allowance
  EXPECT_EQ(st.unexplained_increments, 1);
}

TEST(CliDemoReportTest, OverlappingHoldersAreDetected) {
  WorkerOutcome a{0, 1, {{0, 100, 1100, 1200}}, false, 0};
  WorkerOutcome b{1, 2, {{50, 600, 1600, 1700}}, false, 0};  // acquired while a held it
  EXPECT_EQ(analyze_demo({a, b}, 2, std::nullopt).overlaps, 1);
  WorkerOutcome c{1, 2, {{50, 1150, 1600, 1700}}, false, 0};  // after a's release call
  EXPECT_EQ(analyze_demo({a, c}, 2, std::nullopt).overlaps, 0);
}

TEST(CliDemoReportTest, PercentileIsNearestRank) {
  const std::vector<std::int64_t> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(percentile(v, 50), 5);
  EXPECT_EQ(percentile(v, 99), 10);
  EXPECT_EQ(percentile(v, 0), 1);
  EXPECT_EQ(percentile({42}, 99), 42);
}

TEST(CliEventsTest, FormatAndReadBack) {
  EXPECT_EQ(format_section({1, 2, 3, 4}), "1 2 3 4\n");
  const std::string path = ::testing::TempDir() + "cli_events_test.txt";
  write_sections(path, {{1, 2, 3, 4}, {5, 6, 7, 8}});
  {
    SectionLog log(path + ".log");
    log.append({9, 10, 11, 12});
  }
  const auto back = read_sections(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].t3, 8);
  ASSERT_EQ(read_sections(path + ".log").size(), 1u);
  EXPECT_TRUE(read_sections(path + ".missing").empty());
}

// A rate limiter window as `status` reads it (without changing it): grants older than the
// interval count as available again, as the next acquire would find them.
TEST(CliStatusRateLimiterTest, WindowCountsLiveGrantsAndReturnsExpiredOnes) {
  auto member = [](unsigned char permits) {
    std::string m(1, static_cast<char>(16));
    m += std::string(16, 'x');
    m += std::string{static_cast<char>(permits), 0, 0, 0};
    return m;
  };
  auto str = [](std::string s) {
    Reply r;
    r.kind = Reply::Kind::string;
    r.str = std::move(s);
    return r;
  };
  Reply grants;
  grants.kind = Reply::Kind::array;
  grants.elements = {str(member(2)), str("1000"), str(member(1)), str("1900")};
  // now 2100, interval 1000: the grant at 1000 has left the window, the one at 1900 has not.
  auto w = read_rate_window(5, 1000, 2100, "", str("2"), grants);
  EXPECT_EQ(w.granted, 1);
  EXPECT_EQ(w.grants, 1);
  EXPECT_EQ(w.available, 4);
  // No value key: a fresh window (rate minus live grants).
  w = read_rate_window(5, 1000, 2100, "c", Reply{}, grants);
  EXPECT_EQ(w.available, 4);
  EXPECT_EQ(w.client, "c");
  // Value plus expired above the rate: recomputed from the live grants.
  w = read_rate_window(5, 1000, 2100, "", str("5"), grants);
  EXPECT_EQ(w.available, 4);
}

}  // namespace
}  // namespace redisync::cli

// Issue 17 review: the CLI read server values with std::stoll / std::stod, which took " 5"
// and "12abc" for numbers and "nan" / "inf" for scores (a cast with undefined behaviour).
TEST(ServerNumbers, IntegersAreReadStrictly) {
  using redisync::cli::integer_text;
  EXPECT_EQ(integer_text("42"), 42);
  EXPECT_EQ(integer_text("-7"), -7);
  for (const char* bad : {"", " 5", "5 ", "+5", "12abc", "0x10", "1e3", "99999999999999999999"}) {
    EXPECT_FALSE(integer_text(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(ServerNumbers, ScoresTakeWholeFiniteDoublesOnly) {
  using redisync::cli::score_text;
  EXPECT_EQ(score_text("1700000000000"), 1700000000000LL);
  EXPECT_EQ(score_text("1.7e12"), 1700000000000LL);
  EXPECT_EQ(score_text("922337203685477"), 922337203685477LL);
  for (const char* bad : {"nan", "inf", "-inf", "1e300", " 1.5", "1.5x", "", "0x1p3"}) {
    EXPECT_FALSE(score_text(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(ServerNumbers, StoredIntegerNamesTheKeyAndTheValue) {
  redisync::Reply nil;
  EXPECT_EQ(redisync::cli::stored_integer(nil, "k"), 0);
  redisync::Reply text;
  text.kind = redisync::Reply::Kind::string;
  text.str = "12";
  EXPECT_EQ(redisync::cli::stored_integer(text, "k"), 12);
  text.str = " 12abc";
  try {
    (void)redisync::cli::stored_integer(text, "the demo counter 'c'");
    ADD_FAILURE() << "accepted ' 12abc'";
  } catch (const redisync::cli::CliError& e) {
    EXPECT_NE(std::string(e.what()).find("the demo counter 'c' holds ' 12abc'"), std::string::npos)
        << e.what();
  }
}
