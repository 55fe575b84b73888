// SPDX-License-Identifier: Apache-2.0
// The one kind vocabulary (kinds.h): its names, the earlier spellings it accepts, the library's
// metrics labels it renames, and the errors of a --kind value (no Redis).
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli_error.h"
#include "kinds.h"
#include "metrics_kind_labels.h"

namespace redisync::cli {
namespace {

TEST(CliKinds, NamesAreKebabCaseAndEveryNameOrAliasNamesOneKind) {
  const std::regex kebab("[a-z]+(-[a-z]+)*");
  std::set<std::string_view> seen;
  for (const auto& k : all_kinds()) {
    EXPECT_TRUE(std::regex_match(std::string(k.name), kebab)) << k.name;
    EXPECT_TRUE(seen.insert(k.name).second) << k.name << " twice";
    EXPECT_EQ(parse_kind(k.name), k.kind) << k.name;
    EXPECT_EQ(kind_name(k.kind), k.name);
    for (auto alias : k.aliases) {
      EXPECT_TRUE(seen.insert(alias).second) << alias << " names two kinds";
      EXPECT_EQ(parse_kind(alias), k.kind) << alias;
    }
  }
  for (auto answer : {kNoKind, kAmbiguous, kOtherData}) {
    EXPECT_FALSE(parse_kind(answer)) << answer << " is an answer, not a kind";
  }
  EXPECT_FALSE(parse_kind("Lock"));
  EXPECT_FALSE(parse_kind(""));
}

// The labels the library documents (include/redisync/metrics.h) each have their kind.
TEST(CliKinds, EveryLibraryMetricsLabelHasItsKind) {
  const std::vector<std::pair<std::string, Kind>> labels = {
      {"lock", Kind::lock},
      {"fair_lock", Kind::fair_lock},
      {"read_lock", Kind::read_lock},
      {"write_lock", Kind::write_lock},
      {"fenced_lock", Kind::fenced_lock},
      {"spin_lock", Kind::spin_lock},
      {"non-reentrant_lock", Kind::non_reentrant_lock},
      {"non-reentrant_fair_lock", Kind::non_reentrant_fair_lock},
      {"semaphore", Kind::semaphore},
      {"permit_expirable_semaphore", Kind::permit_expirable_semaphore},
      {"count_down_latch", Kind::count_down_latch},
      {"rate_limiter", Kind::rate_limiter},
      {"multi_lock", Kind::multi_lock},
      {"red_lock", Kind::red_lock}};
  for (const auto& [label, kind] : labels) EXPECT_EQ(kind_of_metrics_label(label), kind) << label;
  EXPECT_FALSE(kind_of_metrics_label("watchdog"));
  EXPECT_FALSE(kind_of_metrics_label("channel"));
  EXPECT_FALSE(kind_of_metrics_label(""));
}

class LastLabel : public Metrics {
 public:
  void increment(const MetricLabels& l, Counter, std::uint64_t) noexcept override {
    kind = std::string(l.kind);
    name = std::string(l.name);
  }
  void observe(const MetricLabels& l, Histogram, double) noexcept override {
    kind = std::string(l.kind);
    name = std::string(l.name);
  }
  std::string kind;
  std::string name;
};

TEST(CliKinds, MetricsCarryTheTableNames) {
  auto last = std::make_shared<LastLabel>();
  auto sink = with_cli_kind_labels(last);
  sink->increment({"permit_expirable_semaphore", "pool"}, Counter::acquires, 1);
  EXPECT_EQ(last->kind, "permit-expirable-semaphore");
  EXPECT_EQ(last->name, "pool");
  sink->observe({"write_lock", "db"}, Histogram::acquire_wait, 0.5);
  EXPECT_EQ(last->kind, "write-lock");
  sink->increment({"watchdog", ""}, Counter::renewals, 3);
  EXPECT_EQ(last->kind, "watchdog") << "not a kind: passed on as it is";
}

TEST(CliKinds, AKindOptionNamesTheChoices) {
  const Kind accepted[] = {Kind::lock, Kind::fair_lock};
  EXPECT_EQ(parse_kind_option("fair", accepted, "--kind"), Kind::fair_lock);
  try {
    parse_kind_option("paxos", accepted, "--kind");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--kind: unknown kind 'paxos' (one of: lock, fair-lock)");
  }
  try {
    parse_kind_option("rwlock", accepted, "--kind");
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "--kind: read-write-lock is not taken here (one of: lock, fair-lock)");
  }
}

}  // namespace
}  // namespace redisync::cli
