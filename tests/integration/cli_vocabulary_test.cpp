// SPDX-License-Identifier: Apache-2.0
// One vocabulary of kinds (issue 37): `ls`, `status`, `run --kind`, `demo --kind` and --json
// name each kind the same way, with a name of the one table `redisync kinds` prints. They used
// to differ: `ls` said rwlock and expirable-semaphore where `status` said read-write and
// permit-expirable-semaphore, and `demo --kind` took fair and rw.
#include <set>

#include "cli_support.h"
#include "redisync/client.h"
#include "redisync/permit_expirable_semaphore.h"
#include "redisync/rate_limiter.h"
#include "redisync/read_write_lock.h"

namespace redisync::test {
namespace {

// Every `"key":"value"` of `json`, in order (the values read here are plain names).
std::vector<std::string> string_fields(const std::string& json, const std::string& key) {
  std::vector<std::string> values;
  const std::string marker = "\"" + key + "\":\"";
  for (auto at = json.find(marker); at != std::string::npos; at = json.find(marker, at + 1)) {
    const auto start = at + marker.size();
    values.push_back(json.substr(start, json.find('"', start) - start));
  }
  return values;
}

// The names listed after "(one of: " in a usage error.
std::vector<std::string> listed_choices(const std::string& message) {
  const std::string marker = "(one of: ";
  const auto at = message.find(marker);
  if (at == std::string::npos) return {};
  const auto end = message.find(')', at);
  std::vector<std::string> names;
  std::istringstream words(message.substr(at + marker.size(), end - at - marker.size()));
  for (std::string w; std::getline(words, w, ',');) {
    names.push_back(w.substr(w.find_first_not_of(' ')));
  }
  return names;
}

class CliVocabularyTest : public CliTest {
 protected:
  // The table's names (`redisync kinds --json`).
  std::set<std::string> table() {
    const auto r = cli({"kinds", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto names = string_fields(r.output, "name");
    return {names.begin(), names.end()};
  }

  std::string kind_from(std::vector<std::string> args) {
    args.insert(args.begin() + 1, {"--redis", server_.url(), "--json"});
    const auto r = cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto kinds = string_fields(r.output, "kind");
    EXPECT_EQ(kinds.size(), 1u) << r.output;
    return kinds.empty() ? "" : kinds.front();
  }
};

TEST_F(CliVocabularyTest, LsAndStatusNameEachKindAlikeFromTheTable) {
  const std::string base = unique_name("cli:vocab:");
  Client client(server_.url());
  auto rw = client.read_write_lock(base + ":rw");
  rw.lock_shared();
  auto pes = client.permit_expirable_semaphore(base + ":pes");
  ASSERT_TRUE(pes.try_set_permits(2));
  const auto permit = pes.acquire();
  auto limiter = client.rate_limiter(base + ":rate");
  limiter.set_rate(RateType::overall, 5, std::chrono::hours(1));

  const auto names = table();
  for (const std::string suffix : {":rw", ":pes", ":rate"}) {
    const std::string name = base + suffix;
    const std::string listed = kind_from({"ls", name});
    const std::string shown = kind_from({"status", name});
    EXPECT_EQ(listed, shown) << name << ": ls and status name its kind differently";
    EXPECT_TRUE(names.contains(listed)) << name << ": '" << listed << "' is not in the table";
  }
  rw.unlock_shared();
  pes.release(permit);
}

// `run --kind` and `demo --kind` take the table's names, and list only those when refusing.
TEST_F(CliVocabularyTest, RunAndDemoTakeTheTableNames) {
  const auto names = table();
  ASSERT_FALSE(names.empty());
  const std::string name = unique_name("cli:vocab:run:");

  const auto r = cli({"run", "--redis", server_.url(), "--kind", "nope", name, "--", "true"});
  EXPECT_EQ(r.exit_code, 64) << r.output;
  const auto run_kinds = listed_choices(r.output);
  EXPECT_GE(run_kinds.size(), 6u) << r.output;
  const auto refused = cli({"demo", "--kind", "nope"});
  EXPECT_EQ(refused.exit_code, 64) << refused.output;
  const auto demo_kinds = listed_choices(refused.output);
  EXPECT_EQ(demo_kinds.size(), 4u) << refused.output;
  for (const auto& kind : demo_kinds) {
    EXPECT_TRUE(names.contains(kind)) << "demo offers '" << kind << "', not in the table";
  }
  EXPECT_EQ(server_.command({"DBSIZE"}).as_integer(), 0) << "a refused kind wrote nothing";

  for (const auto& kind : run_kinds) {
    EXPECT_TRUE(names.contains(kind)) << "run offers '" << kind << "', not in the table";
    std::vector<std::string> args{"run", "--redis", server_.url(), "--kind", kind};
    if (kind == "permit-expirable-semaphore") args.insert(args.end(), {"--permits", "1"});
    args.insert(args.end(), {name + ":" + kind, "--", "true"});
    const auto ran = cli(args);
    EXPECT_EQ(ran.exit_code, 0) << kind << ": " << ran.output;
  }
}

// Earlier spellings still work where a kind is given; output uses the table's name.
TEST_F(CliVocabularyTest, EarlierSpellingsAreAcceptedAndNeverPrinted) {
  const std::string name = unique_name("cli:vocab:alias:");
  auto r = cli({"run", "--redis", server_.url(), "--kind", "fair", "-v", name, "--", "true"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = cli({"run", "--redis", server_.url(), "--kind", "read-write-lock", name, "--", "true"});
  EXPECT_EQ(r.exit_code, 64) << "which side of the read-write-lock? " << r.output;
  EXPECT_NE(r.output.find("read-write-lock is not taken here (one of: "), std::string::npos)
      << r.output;

  const auto kinds = cli({"kinds"});
  ASSERT_EQ(kinds.exit_code, 0) << kinds.output;
  for (const char* old : {"rwlock", "expirable-semaphore", "fair", "rw"}) {
    EXPECT_NE(kinds.output.find(old), std::string::npos)
        << "`redisync kinds` lists '" << old << "' as accepted: " << kinds.output;
    EXPECT_EQ(table().count(old), 0u) << old << " is an alias, not a name";
  }
}

}  // namespace
}  // namespace redisync::test
