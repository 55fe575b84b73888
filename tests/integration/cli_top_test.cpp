// SPDX-License-Identifier: Apache-2.0
// `redisync top` given bad input: a bad URL or pattern, no terminal, an unreachable server,
// a server that dies while it runs. Each ends with a clear message and a non-zero exit
// within a bounded wait; a pattern that matches nothing still shows a screen that q quits.
// Cases that need a terminal run under tmux and read the screen back (capture-pane).
#include "cli_support.h"

namespace redisync::test {
namespace {

class CliTopTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    ASSERT_EQ(run_process({"sh", "-c", "command -v tmux"}, 10s).exit_code, 0)
        << "tmux is needed (scripts/deps.sh installs it)";
  }

  // Runs `top ARGS` in a tmux pane; the shell prints EXIT=<status> when top ends.
  void start_top(const std::string& args, const std::string& redirect = "") {
    const auto started = tmux_.start(cli_ + " top " + args + redirect + "; echo EXIT=$?; sleep 60");
    ASSERT_EQ(started.exit_code, 0) << started.output;
  }

  // Waits (bounded) until the screen shows `text`.
  bool shows(const std::string& text, std::chrono::milliseconds limit = 30s) {
    return wait_until(
        [&] {
          screen_ = tmux_.screen();
          return screen_.find(text) != std::string::npos;
        },
        limit, 100ms);
  }

  std::string unreachable_url() const {
    return "redis://127.0.0.1:" + std::to_string(unused_port()) +
           "?connect_timeout=500ms&retry_attempts=0";
  }

  Tmux tmux_;
  std::string screen_;
};

TEST_F(CliTopTest, BadUrlPatternIntervalAndCountExit64WithTheProblemNamed) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases{
      {{"top", "--redis", "http://127.0.0.1:6379"}, "redis"},
      {{"top", "--redis", server_.url(), ""}, "PATTERN must not be empty"},
      {{"top", "--redis", server_.url(), "--interval", "10ms"}, "--interval"},
      {{"top", "--redis", server_.url(), "--interval", "soon"}, "--interval"},
      {{"top", "--redis", server_.url(), "--count", "0"}, "--count"},
      {{"top", "--redis", server_.url(), "a*", "b*"}, "b*"},
  };
  for (const auto& c : cases) {
    const auto r = cli(c.args, 20s);
    EXPECT_FALSE(r.timed_out) << c.args.back();
    EXPECT_EQ(r.exit_code, 64) << c.args.back() << ": " << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args.back() << ": " << r.output;
  }
}

TEST_F(CliTopTest, WithoutATerminalExits64AndSaysSo) {
  // stdin /dev/null, stdout a pipe: there is no screen to refresh and no key to read.
  const auto r = cli({"top", "--redis", server_.url(), "x*"}, 20s);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 64) << r.output;
  EXPECT_NE(r.output.find("terminal"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("redisync ls"), std::string::npos) << "points to ls: " << r.output;
  EXPECT_EQ(r.output.find("\x1b["), std::string::npos) << "no screen drawn: " << r.output;
}

TEST_F(CliTopTest, StdoutRedirectedAwayFromTheTerminalExits64) {
  const std::string out = temp_file("top.out");
  start_top("--redis " + server_.url() + " 'x*'", " >" + out);
  ASSERT_TRUE(shows("EXIT=")) << screen_;
  EXPECT_NE(screen_.find("EXIT=64"), std::string::npos) << screen_;
  EXPECT_NE(screen_.find("not a terminal"), std::string::npos) << screen_;
  EXPECT_EQ(read_file(out).find("\x1b["), std::string::npos) << "no screen written to the file";
}

TEST_F(CliTopTest, UnreachableServerExits69) {
  start_top("--redis '" + unreachable_url() + "' 'x*'");
  ASSERT_TRUE(shows("EXIT=")) << screen_;
  EXPECT_NE(screen_.find("EXIT=69"), std::string::npos) << screen_;
  EXPECT_NE(screen_.find("redisync:"), std::string::npos) << screen_;
}

TEST_F(CliTopTest, PatternMatchingNothingShowsAnEmptyScreenThatQQuits) {
  start_top("--redis " + server_.url() + " '" + unique_name("cli:topnone:") + "*'");
  ASSERT_TRUE(shows("(nothing matches)")) << screen_;
  tmux_.keys("q");
  ASSERT_TRUE(shows("EXIT=")) << screen_;
  EXPECT_NE(screen_.find("EXIT=0"), std::string::npos) << screen_;
}

TEST_F(CliTopTest, ServerThatDiesWhileTopRunsEndsItWith69) {
  const std::string name = unique_name("cli:topdie:");
  server_.command({"SET", name, "3"});  // a semaphore of 3 permits: one line
  start_top("--redis '" + server_.url() + "' '" + name + "*'");
  ASSERT_TRUE(shows(name)) << screen_;
  server_.kill();
  ASSERT_TRUE(shows("EXIT=", 60s)) << "top must end, not hang: " << screen_;
  EXPECT_NE(screen_.find("EXIT=69"), std::string::npos) << screen_;
  EXPECT_NE(screen_.find("redisync:"), std::string::npos) << screen_;
}

}  // namespace
}  // namespace redisync::test
