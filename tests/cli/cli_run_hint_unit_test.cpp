// SPDX-License-Identifier: Apache-2.0
// `redisync run NAME CMD ARGS...` without "--": the command starts at its first word, as with
// flock(1); with --multi, whose names run on until "--", the parser's error gets a hint
// (tools/redisync/run/run_separator_hint.h), and only that mistake does.
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
std::string hint_for(const std::vector<std::string>& given) {
  CLI::App app;
  RunOptions options;
  CLI::App* run = add_run_command(app, options);
  app.require_subcommand(1);
  const std::vector<std::string> words = with_run_separator(*run, given);
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

// The words with_run_separator gives for `words` (run's own parser decides the options).
std::vector<std::string> separated(const std::vector<std::string>& words) {
  CLI::App app;
  RunOptions options;
  return with_run_separator(*add_run_command(app, options), words);
}

using Words = std::vector<std::string>;

TEST(CliRunSeparatorTest, TheCommandStartsAtTheWordAfterTheName) {
  // `grep -v x`: once taken as run's --verbose and `grep x`, a silently different command.
  EXPECT_EQ(separated({"run", "NAME", "grep", "-v", "x"}),
            (Words{"run", "NAME", "--", "grep", "-v", "x"}));
  EXPECT_EQ(separated({"run", "--wait", "5s", "-v", "NAME", "ls", "--all"}),
            (Words{"run", "--wait", "5s", "-v", "NAME", "--", "ls", "--all"}));
  EXPECT_EQ(separated({"run", "--lease=3s", "NAME", "--fair", "cmd", "--lease", "1"}),
            (Words{"run", "--lease=3s", "NAME", "--fair", "--", "cmd", "--lease", "1"}));
}

TEST(CliRunSeparatorTest, WordsAlreadySeparatedOrNamingSeveralLocksStayAsGiven) {
  const Words with_separator{"run", "NAME", "--", "grep", "-v", "x"};
  EXPECT_EQ(separated(with_separator), with_separator);
  const Words multi{"run", "--multi", "a", "b", "ls", "--all"};
  EXPECT_EQ(separated(multi), multi);
  const Words no_command{"run", "--wait", "5s", "NAME"};
  EXPECT_EQ(separated(no_command), no_command);
  const Words status{"status", "x", "y"};
  EXPECT_EQ(separated(status), status);
}

TEST(CliRunHintTest, CommandOptionsWithoutSeparatorAfterMultiGetTheHint) {
  EXPECT_EQ(hint_for({"run", "NAME", "ls", "--all"}), "(parsed)");
  const std::string hint = hint_for({"run", "--multi", "a", "b", "ls", "--all"});
  EXPECT_NE(hint.find("must follow '--'"), std::string::npos) << hint;
  EXPECT_NE(hint.find("--multi NAME... -- CMD"), std::string::npos) << hint;
}

TEST(CliRunHintTest, OtherMistakesGetNone) {
  EXPECT_EQ(hint_for({"run", "--bogus", "NAME", "--", "ls", "--all"}), "");  // has "--"
  EXPECT_EQ(hint_for({"run", "NAME", "--wait"}), "");                        // no value
  EXPECT_EQ(hint_for({"run", "NAME", "--", "ls", "--all"}), "(parsed)");
  EXPECT_EQ(run_separator_hint({"status", "x", "--bogus"}, CLI::ExtrasError({"--bogus"})), "");
}

}  // namespace
}  // namespace redisync::cli
