// SPDX-License-Identifier: Apache-2.0
// A name `ls` lists can be fed back to `status` and `unlock --force` whatever its bytes
// (issue 37): --json carries them exactly in "name_hex" (and "name" when they are UTF-8), and
// both commands take --name-hex. --json used to give a 0xFF byte as "\u00ff" (U+00FF, whose
// UTF-8 is two other bytes), and a NUL cannot be passed as an argument at all. And `ls` listed
// no lock whose name looked like a helper key (redisson_*, redisync_*, {x}:timeout...).
#include "cli_support.h"

namespace redisync::test {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    out += kDigits[static_cast<unsigned char>(c) >> 4];
    out += kDigits[static_cast<unsigned char>(c) & 15];
  }
  return out;
}

class CliNameBytesTest : public CliTest {};

TEST_F(CliNameBytesTest, EveryListedNameRoundTripsThroughStatusAndUnlock) {
  const std::string base = unique_name("cli:bytes:");
  const std::vector<std::string> names = {
      base +
          ":a\xff"
          "b",                                 // not UTF-8
      base + std::string(":\x00\x01\xfe", 4),  // binary, with a NUL
      base + ":line1\nline2",                  // a newline
      base + ":say \"hi\""};                   // quotes
  for (const auto& name : names) server_.command({"HSET", name, "holder:1", "1"});

  const auto listed = cli({"ls", "--redis", server_.url(), "--json", base + "*"});
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  for (const auto& name : names) {
    SCOPED_TRACE(hex(name));
    EXPECT_TRUE(has(listed.output, "\"name_hex\":\"" + hex(name) + "\"")) << listed.output;

    auto r = cli({"status", "--redis", server_.url(), "--json", "--name-hex", hex(name)});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(has(r.output, "\"name_hex\":\"" + hex(name) + "\"")) << r.output;
    EXPECT_TRUE(has(r.output, "\"type\":\"hash\"")) << "the very key: " << r.output;

    r = cli({"unlock", "--redis", server_.url(), "--force", "--name-hex", hex(name)});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output, "released\n");
    EXPECT_FALSE(key_exists(name)) << "unlock --force --name-hex deleted that very key";
  }
  // Valid UTF-8 keeps its "name", exact; other bytes have only "name_hex" (no lossy "name").
  EXPECT_TRUE(has(listed.output, "\"name\":\"" + base + ":line1\\nline2\"")) << listed.output;
  EXPECT_TRUE(has(listed.output, "\"name\":\"" + base + ":say \\\"hi\\\"\"")) << listed.output;
  EXPECT_FALSE(has(listed.output, "\\u00ff")) << listed.output;
}

// Checked before connecting: against a port nothing listens on, a bad --name-hex is a usage
// error (64), not "unreachable" (69).
TEST_F(CliNameBytesTest, NameHexIsCheckedBeforeConnecting) {
  const std::string nowhere = "redis://127.0.0.1:" + std::to_string(unused_port());
  const std::pair<const char*, const char*> cases[] = {{"zz", "--name-hex 'zz' is not hex"},
                                                       {"abc", "--name-hex 'abc' is not hex"},
                                                       {"", "--name-hex must not be empty"}};
  for (const std::string command : {"status", "unlock"}) {
    for (const auto& [bad, message] : cases) {
      std::vector<std::string> args{command, "--redis", nowhere, "--name-hex", bad};
      if (command == "unlock") args.push_back("--force");
      const auto r = cli(args);
      EXPECT_EQ(r.exit_code, 64) << command << " " << bad << ": " << r.output;
      EXPECT_TRUE(has(r.output, message)) << r.output;
    }
  }
  auto r = cli({"status", "--redis", nowhere, "--name-hex", "61", "a"});
  EXPECT_EQ(r.exit_code, 64) << r.output;
  EXPECT_TRUE(has(r.output, "give the name once")) << r.output;
  r = cli({"unlock", "--redis", nowhere, "--force"});
  EXPECT_EQ(r.exit_code, 64) << r.output;
  EXPECT_TRUE(has(r.output, "must not be empty")) << "neither NAME nor --name-hex: " << r.output;
}

// Locks named like helper keys are locks: their type and fields say so, not their names.
TEST_F(CliNameBytesTest, LocksNamedLikeHelperKeysAreListed) {
  const std::string tag = unique_name("cli:helperlike:");
  const std::vector<std::string> names = {"redisson_" + tag, "redisync_" + tag,
                                          "{" + tag + "}:timeout", "{" + tag + "}:value",
                                          "{" + tag + "}:permits"};
  for (const auto& name : names) server_.command({"HSET", name, "holder:1", "1"});
  // Real helper keys of a fair lock's queue stay folded into their lock's line.
  server_.command({"HSET", tag, "holder:1", "1"});
  server_.command({"RPUSH", "redisson_lock_queue:{" + tag + "}", "waiter:2"});

  const auto r = cli({"ls", "--redis", server_.url(), "*" + tag + "*"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& name : names) {
    EXPECT_FALSE(row_of(r.output, name).empty()) << name << " is a lock: " << r.output;
  }
  EXPECT_EQ(row_of(r.output, tag).at(0), "fair-lock") << r.output;
  EXPECT_TRUE(row_of(r.output, "redisson_lock_queue:{" + tag + "}").empty()) << r.output;
}

}  // namespace
}  // namespace redisync::test
