// SPDX-License-Identifier: Apache-2.0
// `redisync run` for every kind (--fair, --read/--write, --fenced, --semaphore N, --multi),
// its usage errors, and the one rule for names, against a real redis-server.
#include <set>

#include "cli_support.h"

namespace redisync::test {
namespace {

class CliRunKindsTest : public CliTest {
 protected:
  std::vector<std::string> run_args(std::vector<std::string> kind, const std::string& name,
                                    const std::string& script) {
    std::vector<std::string> args{"run", "--redis", server_.url()};
    args.insert(args.end(), kind.begin(), kind.end());
    if (!name.empty()) args.push_back(name);
    args.insert(args.end(), {"--", "sh", "-c", script});
    return args;
  }
};

TEST_F(CliRunKindsTest, FairLockIsTakenInItsLayoutAndReleased) {
  const std::string name = unique_name("cli:fair:");
  const auto r = cli(run_args({"--fair", "-v"}, name, "echo holders=$(redis-cli -p " +
                                                          std::to_string(server_.port()) +
                                                          " HLEN " + name + ")"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("holders=1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("acquired fair lock " + name), std::string::npos) << r.output;
  EXPECT_FALSE(key_exists(name));
}

TEST_F(CliRunKindsTest, ReadersRunTogetherAndAWriterWaitsForThem) {
  const std::string name = unique_name("cli:rw:");
  const std::string dir = temp_file("readers");
  std::filesystem::create_directory(dir);
  // Each reader announces itself and waits (bounded) until the other one is inside too: they
  // only both finish if they held the read lock at the same time.
  auto reader = [&](const std::string& me, const std::string& other) {
    return "touch " + dir + "/" + me + "; i=0; while [ ! -e " + dir + "/" + other +
           " ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; [ -e " + dir + "/" + other +
           " ]";
  };
  std::string out_a;
  std::string out_b;
  const pid_t a = start_cli(run_args({"--read"}, name, reader("a", "b")), &out_a);
  const pid_t b = start_cli(run_args({"--read"}, name, reader("b", "a")), &out_b);
  EXPECT_EQ(finish(a), 0) << read_file(out_a);
  EXPECT_EQ(finish(b), 0) << read_file(out_b);

  // A writer is excluded while a reader holds it.
  const std::string marker = temp_file("reading");
  std::string out_r;
  const pid_t r = start_cli(run_args({"--read"}, name, "touch " + marker + "; sleep 30"), &out_r);
  ASSERT_TRUE(wait_until([&] { return file_exists(marker); }, 10s)) << read_file(out_r);
  auto w = cli(run_args({"--write", "--wait", "0"}, name, "true"));
  EXPECT_EQ(w.exit_code, 75) << w.output;
  EXPECT_NE(w.output.find("write lock " + name + " not acquired"), std::string::npos) << w.output;
  ::kill(r, SIGTERM);
  EXPECT_EQ(finish(r), 128 + SIGTERM) << read_file(out_r);
  w = cli(run_args({"--write", "--wait", "5s"}, name, "true"));
  EXPECT_EQ(w.exit_code, 0) << w.output;
  EXPECT_FALSE(key_exists(name));
}

TEST_F(CliRunKindsTest, FencedTokenReachesTheCommandAndGrows) {
  const std::string name = unique_name("cli:fenced:");
  const std::string log = temp_file("tokens");
  for (int i = 0; i < 2; ++i) {
    const auto r = cli(run_args({"--fenced"}, name, "echo $REDISYNC_FENCING_TOKEN >> " + log));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  std::istringstream tokens(read_file(log));
  long long first = 0;
  long long second = 0;
  ASSERT_TRUE(tokens >> first >> second) << read_file(log);
  EXPECT_GE(first, 1);
  EXPECT_GT(second, first);
  EXPECT_EQ(server_.command({"GET", "redisson_lock_token:{" + name + "}"}).as_string(),
            std::to_string(second));
}

TEST_F(CliRunKindsTest, SemaphoreLetsNHoldersInAndNoMore) {
  const std::string name = unique_name("cli:sem:");
  const std::string marker1 = temp_file("in1");
  const std::string marker2 = temp_file("in2");
  std::string out1;
  std::string out2;
  const pid_t p1 =
      start_cli(run_args({"--semaphore", "2"}, name, "touch " + marker1 + "; sleep 30"), &out1);
  const pid_t p2 =
      start_cli(run_args({"--semaphore", "2"}, name, "touch " + marker2 + "; sleep 30"), &out2);
  ASSERT_TRUE(wait_until([&] { return file_exists(marker1) && file_exists(marker2); }, 10s))
      << read_file(out1) << read_file(out2);
  auto third = cli(run_args({"--semaphore", "2", "--wait", "0"}, name, "true"));
  EXPECT_EQ(third.exit_code, 75) << third.output;
  EXPECT_NE(
      third.output.find("permit-expirable semaphore " + name + " (one of 2 permits) not acquired"),
      std::string::npos)
      << third.output;

  // Another N than the semaphore's total is refused before waiting, naming both numbers.
  const auto other = cli(run_args({"--semaphore", "3", "--wait", "0"}, name, "true"));
  EXPECT_EQ(other.exit_code, 1) << other.output;
  EXPECT_NE(other.output.find("has 2 permits in total, not 3"), std::string::npos)
      << other.output;

  ::kill(p1, SIGTERM);
  EXPECT_EQ(finish(p1), 128 + SIGTERM) << read_file(out1);
  third = cli(run_args({"--semaphore", "2", "--wait", "5s"}, name, "true"));
  EXPECT_EQ(third.exit_code, 0) << third.output;
  ::kill(p2, SIGTERM);
  EXPECT_EQ(finish(p2), 128 + SIGTERM) << read_file(out2);
  EXPECT_EQ(server_.command({"GET", name}).as_string(), "2");  // every permit came back
  EXPECT_EQ(server_.command({"ZCARD", "{" + name + "}:timeout"}).as_integer(), 0);
}

// Foreign data under a semaphore's keys: NAME of another type than a string (a hash, a list),
// or its "{NAME}:timeout" of another type than a sorted set. `run --semaphore` refused them
// only as "server replied WRONGTYPE ... script: <sha>", and in the second case after it had
// created NAME with N permits: a write next to someone else's data. Each is refused before
// anything is written, naming the key and its type (exit 1, as for a lock over foreign data).
// A string that is not a count is refused by the library (nothing written). A plain integer
// string IS the layout (Redisson's RPermitExpirableSemaphore stores its count so, and a
// negative count is what reducing permits while they are held leaves): it is used, as long as
// count + held permits is N.
TEST_F(CliRunKindsTest, SemaphoreOverForeignDataIsRefusedBeforeAnyWrite) {
  struct Case {
    std::vector<std::vector<std::string>> setup;
    std::string key;   // the foreign key, as named in the message
    std::string type;  // its type, as named in the message
  };
  const std::string name = unique_name("cli:semforeign:");
  const std::string timeout = "{" + name + "}:timeout";
  const std::vector<Case> cases{
      {{{"HSET", name, "permits", "2"}}, name, "hash"},
      {{{"RPUSH", name, "2"}}, name, "list"},
      {{{"SET", timeout, "user data"}}, timeout, "string"},
      {{{"SET", name, "2"}, {"HSET", timeout, "a", "b"}}, timeout, "hash"},
  };
  for (const Case& c : cases) {
    server_.command({"DEL", name, timeout});
    for (const auto& command : c.setup) server_.command(command);
    const std::string name_type = server_.command({"TYPE", name}).as_string();
    const auto r = cli(run_args({"--semaphore", "2", "--wait", "0"}, name, "echo RAN"));
    EXPECT_EQ(r.exit_code, 1) << c.key << " " << c.type << ": " << r.output;
    EXPECT_EQ(r.output.find("RAN"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("'" + c.key + "' is a " + c.type), std::string::npos)
        << c.key << " " << c.type << ": " << r.output;
    EXPECT_NE(r.output.find("nothing was written"), std::string::npos) << r.output;
    EXPECT_EQ(server_.command({"TYPE", name}).as_string(), name_type) << c.key << " " << c.type;
  }

  server_.command({"DEL", name, timeout});
  server_.command({"SET", name, "two"});
  auto r = cli(run_args({"--semaphore", "2", "--wait", "0"}, name, "echo RAN"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("holds 'two', not a count"), std::string::npos) << r.output;
  EXPECT_EQ(server_.command({"GET", name}).as_string(), "two");
  EXPECT_FALSE(key_exists(timeout));

  // A count of -1 with three permits held (until far in the future) is a semaphore of 2 whose
  // permits were reduced while held: used, and it has no permit free.
  server_.command({"SET", name, "-1"});
  server_.command({"ZADD", timeout, "99999999999999", "aaaaaaaaaaaaaaaa", "99999999999999",
                   "bbbbbbbbbbbbbbbb", "99999999999999", "cccccccccccccccc"});
  r = cli(run_args({"--semaphore", "2", "--wait", "0"}, name, "echo RAN"));
  EXPECT_EQ(r.exit_code, 75) << r.output;
  server_.command({"DEL", timeout});
  server_.command({"SET", name, "2"});  // a plain integer: the layout
  r = cli(run_args({"--semaphore", "2", "--wait", "0"}, name, "echo RAN"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("RAN"), std::string::npos) << r.output;
  EXPECT_EQ(server_.command({"GET", name}).as_string(), "2");
}

TEST_F(CliRunKindsTest, SemaphorePermitTakenAwayIsALostLock) {
  const std::string name = unique_name("cli:semlost:");
  const std::string marker = temp_file("in");
  std::string out;
  const pid_t pid = start_cli(run_args({"--semaphore", "1", "--watchdog-timeout", "900ms"}, name,
                                       "touch " + marker + "; exec sleep 30"),
                              &out);
  ASSERT_TRUE(wait_until([&] { return file_exists(marker); }, 10s)) << read_file(out);
  server_.command({"DEL", "{" + name + "}:timeout"});  // the permit is gone
  EXPECT_EQ(finish(pid, 15s), 76) << read_file(out);
  EXPECT_NE(
      read_file(out).find("permit-expirable semaphore " + name + " (one of 1 permits) lost: "),
      std::string::npos)
      << read_file(out);
}

TEST_F(CliRunKindsTest, ReadLockLostExits76) {
  const std::string name = unique_name("cli:rwlost:");
  const std::string marker = temp_file("in");
  std::string out;
  const pid_t pid = start_cli(run_args({"--read", "--watchdog-timeout", "900ms"}, name,
                                       "touch " + marker + "; exec sleep 30"),
                              &out);
  ASSERT_TRUE(wait_until([&] { return file_exists(marker); }, 10s)) << read_file(out);
  server_.command({"DEL", name});
  EXPECT_EQ(finish(pid, 15s), 76) << read_file(out);
  EXPECT_NE(read_file(out).find("read lock " + name + " lost: "), std::string::npos)
      << read_file(out);
}

TEST_F(CliRunKindsTest, MultiHoldsEveryLockAtOnce) {
  const std::string a = unique_name("cli:multi:a:");
  const std::string b = unique_name("cli:multi:b:");
  const std::string probe = "redis-cli -p " + std::to_string(server_.port()) + " EXISTS ";
  auto r = cli({"run", "--redis", server_.url(), "--multi", a, b, "--", "sh", "-c",
                "echo a=$(" + probe + a + ") b=$(" + probe + b + ")"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("a=1 b=1"), std::string::npos) << r.output;
  EXPECT_FALSE(key_exists(a));
  EXPECT_FALSE(key_exists(b));

  // One member held elsewhere: not acquired, and the other member is not kept.
  server_.command({"HSET", b, "someone-else:1", "1"});
  r = cli({"run", "--redis", server_.url(), "--wait", "0", "--multi", a, b, "--", "true"});
  EXPECT_EQ(r.exit_code, 75) << r.output;
  EXPECT_FALSE(key_exists(a));
}

TEST_F(CliRunKindsTest, MultiLockMemberLostExits76) {
  const std::string a = unique_name("cli:multilost:a:");
  const std::string b = unique_name("cli:multilost:b:");
  const std::string marker = temp_file("in");
  std::string out;
  const pid_t pid = start_cli({"run", "--redis", server_.url(), "--watchdog-timeout", "900ms",
                               "--fair", "--multi", a, b, "--", "sh", "-c",
                               "touch " + marker + "; exec sleep 30"},
                              &out);
  ASSERT_TRUE(wait_until([&] { return file_exists(marker); }, 10s)) << read_file(out);
  server_.command({"DEL", b});
  EXPECT_EQ(finish(pid, 15s), 76) << read_file(out);
  EXPECT_NE(read_file(out).find("fair locks " + a + ", " + b + " lost: "), std::string::npos)
      << read_file(out);
}

TEST_F(CliRunKindsTest, ExclusiveOptionsAndBadCountsAreUsageErrors) {
  const std::string name = unique_name("cli:usage:");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--fair", "--read"}, "exclude each other"},
      {{"--read", "--write"}, "exclude each other"},
      {{"--fenced", "--semaphore", "2"}, "exclude each other"},
      {{"--semaphore", "0"}, "N must be a whole number of permits >= 1"},
      {{"--semaphore", "-3"}, "N must be a whole number of permits >= 1"},
      {{"--semaphore", "2x"}, "N must be a whole number of permits >= 1"},
  };
  for (const auto& [flags, message] : cases) {
    const auto r = cli(run_args(flags, name, "true"));
    EXPECT_EQ(r.exit_code, 64) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << r.output;
  }
  auto r = cli({"run", "--redis", server_.url(), "--fenced", "--multi", "x", "y", "--", "true"});
  EXPECT_EQ(r.exit_code, 64) << r.output;
  r = cli({"run", "--redis", server_.url(), "--multi", "x", "x", "--", "true"});
  EXPECT_EQ(r.exit_code, 64) << r.output;
  EXPECT_NE(r.output.find("twice"), std::string::npos) << r.output;
  r = cli({"demo", "--kind", "nope"});
  EXPECT_EQ(r.exit_code, 64) << r.output;
  EXPECT_NE(r.output.find("--kind: unknown kind 'nope' (one of: lock, fair-lock, read-write-lock, "
                          "fenced-lock)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(server_.command({"DBSIZE"}).as_integer(), 0);  // nothing written
}

// Issue 36 item 6: `run --semaphore N` took N up to 2^53 - 1 and wrote it as the count, which
// the permit-expirable semaphore's scripts then refused in every later step (the next run
// failed, and so did every Java or library user of the name). N beyond the scripts' limit is a
// usage error now, naming the limit, and nothing is written; N at the limit works, twice.
TEST_F(CliRunKindsTest, SemaphoreCountBeyondTheLimitIsAUsageErrorAndWritesNothing) {
  const std::string name = unique_name("cli:limit:");
  for (const std::string n : {"1000000000000000", "9007199254740991"}) {
    const auto r = cli(run_args({"--semaphore", n}, name, "true"));
    EXPECT_EQ(r.exit_code, 64) << n << ": " << r.output;
    EXPECT_NE(r.output.find("<= 999999999999999 (got '" + n + "')"), std::string::npos)
        << r.output;
    EXPECT_EQ(server_.command({"DBSIZE"}).as_integer(), 0) << n << ": wrote";
  }
  for (int run = 0; run < 2; ++run) {
    const auto r = cli(run_args({"--semaphore", "999999999999999"}, name, "true"));
    EXPECT_EQ(r.exit_code, 0) << "run " << run << ": " << r.output;
  }
  EXPECT_EQ(server_.command({"GET", name}).as_string(), "999999999999999");
}

// Issue 22 item 8: `unlock --force ""` exited 1 and `status ""` succeeded while `run ""` was a
// usage error. One rule now: an empty name is a usage error (64) for every command.
TEST_F(CliRunKindsTest, EmptyNameIsAUsageErrorForEveryCommand) {
  const std::string url = server_.url();
  const std::vector<std::vector<std::string>> commands{
      {"run", "--redis", url, "", "--", "true"},
      {"run", "--redis", url, "--multi", "a", "", "--", "true"},
      {"status", "--redis", url, ""},
      {"unlock", "--redis", url, "--force", ""},
      {"ls", "--redis", url, ""},
  };
  for (const auto& args : commands) {
    const auto r = cli(args);
    EXPECT_EQ(r.exit_code, 64) << args[0] << ": " << r.output;
    EXPECT_NE(r.output.find("must not be empty"), std::string::npos) << args[0] << ": "
                                                                      << r.output;
  }
}

TEST_F(CliRunKindsTest, EveryCommandHasHelp) {
  for (const char* command : {"run", "status", "unlock", "ls", "top", "demo"}) {
    const auto r = cli({command, "--help"});
    EXPECT_EQ(r.exit_code, 0) << command << ": " << r.output;
    EXPECT_NE(r.output.find("--redis"), std::string::npos) << command << ": " << r.output;
  }
}

TEST_F(CliRunKindsTest, DemoRunsWithEveryKind) {
  // The kinds by name, and "rw", an earlier spelling (the write side of a read-write-lock).
  const std::pair<const char*, const char*> kinds[] = {{"fair-lock", "contend for fair lock"},
                                                       {"rw", "contend for read-write lock"},
                                                       {"fenced-lock", "contend for fenced lock"}};
  for (const auto& [kind, header] : kinds) {
    const auto r = cli({"demo", "--redis", server_.url(), "--kind", kind, "--workers", "3",
                        "--seconds", "1", "--no-kill"},
                       60s);
    EXPECT_EQ(r.exit_code, 0) << kind << ": " << r.output;
    EXPECT_NE(r.output.find("lost updates: 0"), std::string::npos) << kind << ": " << r.output;
    EXPECT_NE(r.output.find(header), std::string::npos) << r.output;
  }
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The command lines (arguments joined by spaces) of the children of `parent` that run
// `redisync demo-worker` (a child between fork and exec still shows the parent's), from /proc.
std::vector<std::string> demo_worker_command_lines(pid_t parent) {
  std::vector<std::string> lines;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = slurp("/proc/" + pid + "/stat");
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 1));
    std::string state;
    long ppid = 0;
    if (!(fields >> state >> ppid) || ppid != parent) continue;
    std::string line = slurp("/proc/" + pid + "/cmdline");
    std::replace(line.begin(), line.end(), '\0', ' ');
    if (line.find("demo-worker") != std::string::npos) lines.push_back(line);
  }
  return lines;
}

// `ps` shows every process's command line to every user: the demo hands a password-bearing
// URL to its workers in the environment, never as an argument.
TEST_F(CliRunKindsTest, DemoWorkersNeverShowThePasswordOnTheirCommandLines) {
  const std::string password = "demo-s3cret-pw";
  RedisServer secured(ServerOptions{.password = password});
  std::string output;
  const pid_t demo = start_cli(
      {"demo", "--redis", secured.url(), "--workers", "2", "--seconds", "2", "--no-kill"}, &output);
  std::set<std::string> seen;
  for (int i = 0; i < 1000 && seen.size() < 2; ++i) {
    for (const std::string& line : demo_worker_command_lines(demo)) seen.insert(line);
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(finish(demo, 60s), 0) << read_file(output);
  EXPECT_EQ(seen.size(), 2u) << "workers seen: " << seen.size();
  for (const std::string& line : seen) {
    EXPECT_EQ(line.find(password), std::string::npos) << line;
    EXPECT_EQ(line.find("s3cret"), std::string::npos) << line;
  }
}

}  // namespace
}  // namespace redisync::test
