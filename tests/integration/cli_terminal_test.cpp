// SPDX-License-Identifier: Apache-2.0
// `redisync run` at an interactive terminal (under tmux): the command has its own process group
// (issue 17 item 6), so run hands it the terminal: it can read it, ^Z stops the job as a whole
// (the shell gets its prompt back, the lock stays held), and fg continues it.
#include "cli_support.h"

namespace redisync::test {
namespace {

class CliTerminalTest : public CliTest {};

TEST_F(CliTerminalTest, CommandReadsTheTerminalAndFollowsJobControl) {
  ASSERT_EQ(run_process({"sh", "-c", "command -v tmux"}, 10s).exit_code, 0)
      << "tmux is needed (scripts/deps.sh installs it)";
  const std::string name = unique_name("cli:tty:");
  Tmux tmux;
  ASSERT_EQ(tmux.start("bash --norc --noprofile -i").exit_code, 0);
  std::string screen;
  auto shows = [&](const std::string& text) {
    return wait_until(
        [&] {
          screen = tmux.screen();
          return screen.find(text) != std::string::npos;
        },
        15s, 100ms);
  };
  tmux.keys("PS1='$ '; " + cli_ + " run --redis " + server_.url() + " " + name +
            " -- sh -c 'echo rea\"\"dy; read x; echo got=$x'");  // "ready" only once it runs
  tmux.keys("Enter");
  ASSERT_TRUE(shows("ready")) << screen;
  tmux.keys("C-z");
  ASSERT_TRUE(shows("Stopped")) << screen;
  EXPECT_TRUE(key_exists(name));  // a stopped job keeps its lock
  tmux.keys("fg");
  tmux.keys("Enter");
  tmux.keys("typed");
  tmux.keys("Enter");
  ASSERT_TRUE(shows("got=typed")) << screen;
  tmux.keys("echo EXIT=$?");
  tmux.keys("Enter");
  ASSERT_TRUE(shows("EXIT=0")) << screen;
  EXPECT_FALSE(key_exists(name));
}

}  // namespace
}  // namespace redisync::test
