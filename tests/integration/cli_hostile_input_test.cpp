// The `redisync` tool against hostile input: names and stored fields with control characters,
// and servers that misbehave. Each test names the attack it makes.
#include <string>

#include "cli_support.h"
#include "redisync/redisync.h"

namespace redisync::test {
namespace {

using CliHostileInputTest = CliTest;

std::size_t count_of(const std::string& text, char c) {
  std::size_t n = 0;
  for (char x : text) n += x == c ? 1 : 0;
  return n;
}

// Attack: a lock whose name (anyone who can write a key chooses it) holds a newline followed by a
// forged row, and a terminal escape (ESC ] ... BEL sets the window title; ESC [ 2J clears the
// screen). `ls` and `status` print names in their text output: written raw, the newline forges
// a row of `ls` / a line of `status` and the escapes reach the operator's terminal.
TEST_F(CliHostileInputTest, ControlCharactersInNamesAndFieldsAreEscapedInTextOutput) {
  const std::string base = unique_name("cli:hostile:");
  const std::string name = base + "\nlock  forged  1 x:1  30000 ms  -  -\x1b]0;pwned\x07\x1b[2J";
  Client client(server_.url());
  Lock lock = client.lock(name);
  lock.lock();

  auto r = cli({"ls", "--redis", server_.url(), base + "*"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\x07'), std::string::npos) << r.output;
  EXPECT_EQ(count_of(r.output, '\n'), 2u) << "a header and one row:\n" << r.output;
  EXPECT_NE(r.output.find(base + "\\n" + "lock  forged"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\\x1b]0;pwned\\x07\\x1b[2J"), std::string::npos) << r.output;

  r = cli({"status", "--redis", server_.url(), name});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("name:"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("\nlock  forged"), std::string::npos) << r.output;

  // JSON keeps the exact bytes (escaped the JSON way).
  r = cli({"ls", "--redis", server_.url(), "--json", base + "*"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\\nlock  forged"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\\u001b]0;pwned\\u0007"), std::string::npos) << r.output;

  // A holder field (the owner a writer chose) is printed by `status` too.
  const std::string forged = base + ":field";
  server_.command({"HSET", forged, "x:1\nholder: someone-else:2 (hold count 1)\x1b[2J", "1"});
  server_.command({"PEXPIRE", forged, "60000"});
  r = cli({"status", "--redis", server_.url(), forged});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("\nholder: someone-else"), std::string::npos) << r.output;

  // Error messages name the lock: the same escaping.
  server_.command({"SET", base + "\x1b[2J:text", "not a lock"});
  r = cli({"unlock", "--redis", server_.url(), "--force", base + "\x1b[2J:text"});
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\\x1b[2J"), std::string::npos) << r.output;
  lock.unlock();
}

}  // namespace
}  // namespace redisync::test
