// SPDX-License-Identifier: Apache-2.0
// `redisync run NAME cmd --opt` without "--": the parser's error gets a hint
// (tools/redisync/run_separator_hint.h), and only that mistake does.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "run_command.h"
#include "run_separator_hint.h"

namespace redisync::cli {
namespace {

// Parses `words` as main() does (the words from "--" on are the command, not parsed) and
// returns the hint for the error, or "(parsed)".
std::string hint_for(const std::vector<std::string>& words) {
  CLI::App app;
  RunOptions options;
  add_run_command(app, options);
  app.require_subcommand(1);
  const auto separator = std::find(words.begin(), words.end(), "--");
  std::vector<std::string> ours(words.begin(), separator);
  std::reverse(ours.begin(), ours.end());
  try {
    app.parse(ours);
  } catch (const CLI::ParseError& e) {
    return run_separator_hint(words, e);
  }
  return "(parsed)";
}

TEST(CliRunHintTest, CommandOptionsWithoutSeparatorGetTheHint) {
  const std::string hint = hint_for({"run", "NAME", "ls", "--all"});
  EXPECT_NE(hint.find("must follow '--'"), std::string::npos) << hint;
  EXPECT_NE(hint.find("redisync run [options] NAME -- CMD"), std::string::npos) << hint;
  EXPECT_NE(hint_for({"run", "NAME", "grep", "-q", "x"}), "");
}

TEST(CliRunHintTest, OtherMistakesGetNone) {
  EXPECT_EQ(hint_for({"run", "--bogus", "NAME", "--", "ls", "--all"}), "");  // has "--"
  EXPECT_EQ(hint_for({"run", "NAME", "--wait"}), "");                        // no value
  EXPECT_EQ(hint_for({"run", "NAME", "--", "ls", "--all"}), "(parsed)");
  EXPECT_EQ(run_separator_hint({"status", "x", "--bogus"}, CLI::ExtrasError({"--bogus"})), "");
}

}  // namespace
}  // namespace redisync::cli
