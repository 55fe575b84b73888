// SPDX-License-Identifier: Apache-2.0
// The `redisync` tool against hostile input: names and stored fields with control characters,
// and servers that misbehave. Each test names the attack it makes.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "cli_support.h"
#include "redisync/redisync.h"
#include "support/fixed_reply_server.h"

namespace redisync::test {
namespace {

using CliHostileInputTest = CliTest;

// A TCP listener on loopback that accepts connections and never answers (a hung server).
class SilentListener {
 public:
  SilentListener() {
    const auto listener = listen_on_loopback();
    fd_ = listener.fd;
    port_ = listener.port;
    thread_ = std::thread([this] {
      while (!stop_) {
        const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (c >= 0) accepted_.push_back(c);  // kept open, never read or written
      }
    });
  }
  ~SilentListener() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);  // wakes accept()
    thread_.join();
    ::close(fd_);
    for (int c : accepted_) ::close(c);
  }
  std::uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<int> accepted_;  // the accept thread's alone until it is joined
  std::thread thread_;
};

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
  // The name is one word of its row: its spaces too are escaped.
  EXPECT_NE(r.output.find(base + "\\n" + "lock\\x20\\x20forged"), std::string::npos) << r.output;
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

// Attack: `run --wait D` while Redis cannot be reached (nothing listens; a server that accepts
// and never answers). A timed acquire that could not get through is "not acquired" to the
// library; the tool said "not acquired within D (held by someone else)" and exited 75, so a
// script took an outage for contention (and e.g. skipped its job as "another copy runs").
// Unreachable is exit 69, whatever the kind.
TEST_F(CliHostileInputTest, RunWithAWaitAgainstUnreachableRedisExits69NotNotAcquired) {
  const std::string port = std::to_string(unused_port());
  const std::string refused = "redis://127.0.0.1:" + port + "?retry_attempts=0";
  // With resends (the defaults: 3, 1.5 s apart) a wait ends while they still fail.
  const std::string resending = "redis://127.0.0.1:" + port;
  const std::vector<std::vector<std::string>> cases{
      {refused, "--wait", "0", "x"},
      {refused, "--wait", "0", "--read", "x"},
      {refused, "--wait", "0", "--fenced", "x"},
      {refused, "--wait", "0", "--multi", "a", "b"},
      {resending, "--wait", "1s", "x"}};
  for (const auto& c : cases) {
    std::vector<std::string> args{"run", "--redis"};
    args.insert(args.end(), c.begin(), c.end());
    args.insert(args.end(), {"--", "true"});
    const auto r = cli(args);
    EXPECT_EQ(r.exit_code, 69) << c[2] << " " << c[3] << " " << c.back() << ": " << r.output;
    EXPECT_NE(r.output.find("cannot reach Redis"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("held by someone else"), std::string::npos) << r.output;
  }

  // A member that is not a lock (the server answers WRONGTYPE) is no contention either.
  const std::string data = unique_name("cli:data:");
  server_.command({"SET", data, "user data"});
  auto r = cli({"run", "--redis", server_.url(), "--wait", "0", "--multi", unique_name("cli:m:"),
                data, "--", "true"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("WRONGTYPE"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("held by someone else"), std::string::npos) << r.output;
  EXPECT_EQ(server_.command({"GET", data}).as_string(), "user data");

  SilentListener hung;
  const std::string silent = "redis://127.0.0.1:" + std::to_string(hung.port()) +
                             "?retry_attempts=0&timeout=300";
  r = cli({"run", "--redis", silent, "--wait", "0", "--multi", "a", "b", "--", "true"});
  EXPECT_EQ(r.exit_code, 69) << r.output;
  EXPECT_EQ(r.output.find("held by someone else"), std::string::npos) << r.output;
}

// Mistake (or a planted config): a URL naming a database the server does not have
// (redis://host/99999; Redis has 16 by default). SELECT was refused on every connect, and the
// tool said "cannot reach Redis" and exited 69 (unavailable) after its resends, as if the
// server were down: it is a configuration error, exit 64, naming the index and the server's
// answer. Indexes that cannot be one (negative, not a number, past int) are refused before
// connecting.
TEST_F(CliHostileInputTest, DatabaseTheServerDoesNotHaveIsAUsageErrorNotUnreachable) {
  const std::string url = "redis://127.0.0.1:" + std::to_string(server_.port()) + "/99999";
  const std::string name = unique_name("cli:db:");
  const std::vector<std::vector<std::string>> commands{
      {"run", "--redis", url, "--wait", "0", name, "--", "true"},
      {"run", "--redis", url, name, "--", "true"},
      {"status", "--redis", url, name},
      {"ls", "--redis", url},
      {"unlock", "--redis", url, "--force", name}};
  for (const auto& args : commands) {
    const auto r = cli(args, 15s);
    EXPECT_EQ(r.exit_code, 64) << args[0] << ": " << r.output;
    EXPECT_NE(r.output.find("database 99999"), std::string::npos) << args[0] << ": " << r.output;
    EXPECT_NE(r.output.find("DB index is out of range"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("cannot reach Redis"), std::string::npos) << r.output;
  }
  EXPECT_FALSE(key_exists(name));
  const std::string base = "redis://127.0.0.1:" + std::to_string(server_.port());
  for (const std::string& bad : {base + "/-1", base + "/x", base + "/99999999999",
                                 base + "?db=-2", base + "?db=1e3"}) {
    const auto r = cli({"status", "--redis", bad, name}, 15s);
    EXPECT_EQ(r.exit_code, 64) << bad << ": " << r.output;
    EXPECT_NE(r.output.find("database must be a non-negative integer"), std::string::npos)
        << bad << ": " << r.output;
  }
}

// Attack: a URL with a user name and no password ("redis://guest:@host", "?user=guest"). Redis
// ACL users may have no password (nopass); the user was dropped and the tool ran as "default",
// with default's rights: here it took the lock although guest may run no command at all.
TEST_F(CliHostileInputTest, UserNameWithoutAPasswordIsUsedNotDropped) {
  ASSERT_EQ(server_.command({"ACL", "SETUSER", "guest", "reset", "on", "nopass"}).as_string(),
            "OK");
  ASSERT_EQ(server_.command({"ACL", "SETUSER", "worker", "reset", "on", "nopass", "~*", "&*",
                             "+@all"})
                .as_string(),
            "OK");
  const std::string host = "127.0.0.1:" + std::to_string(server_.port());
  const std::string name = unique_name("cli:user:");
  for (const std::string& url : {"redis://guest:@" + host + "?retry_attempts=0",
                                 "redis://" + host + "?user=guest&retry_attempts=0"}) {
    const auto r = cli({"run", "--redis", url, "--wait", "0", name, "--", "true"});
    EXPECT_NE(r.exit_code, 0) << url << ": " << r.output;
    EXPECT_NE(r.output.find("NOPERM"), std::string::npos) << url << ": " << r.output;
    EXPECT_FALSE(key_exists(name));
  }
  // A user with rights and no password works as itself.
  const std::string marker = temp_file("worker.user");
  const auto r = cli({"run", "--redis", "redis://worker:@" + host, "--wait", "0", name, "--", "sh",
                      "-c", "touch " + marker});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(file_exists(marker));
}

// Attack: SIGKILL a `redisync run --fair` while it waits in the queue. Its queue entry keeps
// the head for the fair-lock wait allowance, once 5 minutes (Redisson's threadWaitTime): the
// lock, free once its holder is done, was refused to everyone else that long, far past any
// lease (and `run` said "held by someone else"). The allowance is now 5 s from the waiter's
// last poll, and `run` caps it at the watchdog lease.
TEST_F(CliHostileInputTest, SigkilledFairWaiterDoesNotBlockTheFreeLockForMinutes) {
  const std::string name = unique_name("cli:fairkill:");
  const std::string marker = temp_file("fair.holder");
  std::string holder_out;
  const pid_t holder = start_cli({"run", "--redis", server_.url(), "--fair", "--watchdog-timeout",
                                  "1s", name, "--", "sh", "-c", "touch " + marker + "; sleep 2"},
                                 &holder_out);
  ASSERT_TRUE(started(marker)) << read_file(holder_out);
  std::string waiter_out;
  const pid_t waiter = start_cli(
      {"run", "--redis", server_.url(), "--fair", "--watchdog-timeout", "1s", name, "--", "true"},
      &waiter_out);
  const std::string queue = "redisson_lock_queue:{" + name + "}";
  EXPECT_TRUE(wait_until([&] { return server_.command({"LLEN", queue}).as_integer() == 1; }, 10s))
      << read_file(waiter_out);
  ::kill(waiter, SIGKILL);
  EXPECT_EQ(finish(waiter), 128 + SIGKILL);
  EXPECT_EQ(finish(holder), 0) << read_file(holder_out);

  // The lock is free; the dead waiter's entry must not keep it for minutes.
  const auto r = cli({"run", "--redis", server_.url(), "--fair", "--wait", "20s", name, "--",
                      "true"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// A server or proxy that answers TYPE and SCAN with what Redis never sends: status, unlock
// and ls fail naming the reply. They used to show the key as of type "" or "OK" (exit 0), and
// ls showed an empty list as the answer.
TEST_F(CliHostileInputTest, RepliesOfTheWrongShapeAreErrorsNotAnswers) {
  for (const std::string reply :
       {":0\r\n", "+OK\r\n", "$-1\r\n", "*2\r\n$1\r\n0\r\n*1\r\n:5\r\n"}) {
    FixedReplyServer server(reply);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"status", "lk"}, {"unlock", "--force", "lk"}, {"ls"}}) {
      auto full = args;
      full.insert(full.end(), {"--redis", server.url()});
      const auto r = cli(full, 20s);
      EXPECT_EQ(r.exit_code, 1) << args[0] << " with reply " << reply << ": " << r.output;
      EXPECT_NE(r.output.find("unexpected reply to"), std::string::npos)
          << args[0] << " with reply " << reply << ": " << r.output;
    }
  }
}

// An option given with an empty value (an unset shell variable: --wait "$WAIT"): a usage
// error naming the option. `run` used to take it as "not given": --wait '' waited forever,
// --lease '' took the watchdog lease, --semaphore '' took a plain lock.
TEST_F(CliHostileInputTest, AnEmptyOptionValueIsAUsageErrorNotTheDefault) {
  const auto name = unique_name("empty-option:");
  for (const std::string option :
       {"--wait", "--lease", "--watchdog-timeout", "--semaphore", "--metrics-port"}) {
    const auto r = cli({"run", "--redis", server_.url(), option, "", name, "--", "true"}, 20s);
    EXPECT_EQ(r.exit_code, 64) << option << ": " << r.output;
    EXPECT_NE(r.output.find(option), std::string::npos) << option << ": " << r.output;
    EXPECT_NE(r.output.find("empty value"), std::string::npos) << option << ": " << r.output;
  }
  EXPECT_FALSE(key_exists(name)) << "something was written before the input was known good";
}

}  // namespace
}  // namespace redisync::test
