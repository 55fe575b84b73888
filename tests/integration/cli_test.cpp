// SPDX-License-Identifier: Apache-2.0
// End-to-end tests of the `redisync` command-line tool (tools/redisync) against real
// redis-servers. The binary is $REDISYNC_CLI, else <dir of this test>/../tools/redisync/redisync
// (the build tree layout).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_support.h"
#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_util.h"

namespace redisync::test {
namespace {

using namespace std::chrono_literals;

TEST_F(CliTest, RunPassesTheCommandsExitStatus) {
  const std::string name = unique_name("cli:status:");
  auto r = cli({"run", "--redis", server_.url(), name, "--", "sh", "-c", "exit 7"});
  EXPECT_EQ(r.exit_code, 7) << r.output;
  EXPECT_EQ(r.output, "");  // nothing of its own without -v
  r = cli({"run", "--redis", server_.url(), name, "--", "sh", "-c", "kill -9 $$"});
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.output;
  r = cli({"run", "--redis", server_.url(), "-v", name, "--", "true"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("acquired lock " + name), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("released lock " + name), std::string::npos) << r.output;
  EXPECT_FALSE(key_exists(name));
}

TEST_F(CliTest, RunCommandNotFoundExits127WithoutTakingTheLock) {
  const std::string name = unique_name("cli:nf:");
  const auto r = cli({"run", "--redis", server_.url(), name, "--", "no-such-command-xyz"});
  EXPECT_EQ(r.exit_code, 127) << r.output;
  EXPECT_NE(r.output.find("no-such-command-xyz: command not found"), std::string::npos) << r.output;
  EXPECT_FALSE(key_exists(name));
}

TEST_F(CliTest, RunHoldersNeverOverlap) {
  const std::string name = unique_name("cli:excl:");
  const std::string log = temp_file("intervals.txt");
  const std::string script =
      "echo \"S $(date +%s%N)\" >> " + log + "; sleep 0.2; echo \"E $(date +%s%N)\" >> " + log;
  std::vector<pid_t> pids;
  std::vector<std::string> outputs(4);
  for (int i = 0; i < 4; ++i) {
    pids.push_back(start_cli({"run", "--redis", server_.url(), name, "--", "sh", "-c", script},
                             &outputs[static_cast<std::size_t>(i)]));
  }
  for (std::size_t i = 0; i < pids.size(); ++i) {
    EXPECT_EQ(finish(pids[i]), 0) << read_file(outputs[i]);
  }
  // Mutual exclusion: starts and ends strictly alternate, in time order.
  std::istringstream lines(read_file(log));
  std::string kind;
  long long ts = 0;
  long long last = 0;
  int count = 0;
  while (lines >> kind >> ts) {
    EXPECT_EQ(kind, count % 2 == 0 ? "S" : "E") << "line " << count << ":\n" << read_file(log);
    EXPECT_GE(ts, last);
    last = ts;
    ++count;
  }
  EXPECT_EQ(count, 8) << read_file(log);
  EXPECT_FALSE(key_exists(name));
}

TEST_F(CliTest, RunWaitZeroOnAHeldLockExits75) {
  const std::string name = unique_name("cli:held:");
  server_.command({"HSET", name, "someone-else:1", "1"});
  auto r = cli({"run", "--redis", server_.url(), "--wait", "0", name, "--", "true"});
  EXPECT_EQ(r.exit_code, 75) << r.output;
  EXPECT_NE(r.output.find("not acquired"), std::string::npos) << r.output;

  const auto start = std::chrono::steady_clock::now();
  r = cli({"run", "--redis", server_.url(), "--wait", "300ms", name, "--", "true"});
  EXPECT_EQ(r.exit_code, 75) << r.output;
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  EXPECT_EQ(server_.command({"HGET", name, "someone-else:1"}).as_string(), "1");
}

TEST_F(CliTest, RunForwardsSigtermAndReleasesTheLock) {
  const std::string name = unique_name("cli:term:");
  const std::string marker = temp_file("started");
  std::string out;
  const pid_t pid = start_sleeper(name, marker, &out);
  ASSERT_TRUE(started(marker)) << read_file(out);
  EXPECT_TRUE(key_exists(name));
  ::kill(pid, SIGTERM);
  EXPECT_EQ(finish(pid, 10s), 128 + SIGTERM) << read_file(out);  // sleep died of the SIGTERM
  EXPECT_FALSE(key_exists(name));
}

TEST_F(CliTest, RunLostLockTerminatesTheCommandAndExits76) {
  const std::string name = unique_name("cli:lost:");
  const std::string marker = temp_file("started");
  std::string out;
  const pid_t pid = start_sleeper(name, marker, &out, {"--watchdog-timeout", "900ms"});
  ASSERT_TRUE(started(marker)) << read_file(out);
  server_.command({"DEL", name});
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(finish(pid, 15s), 76) << read_file(out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);  // renewal every 300 ms notices
  EXPECT_NE(read_file(out).find("redisync: lock " + name + " lost: "), std::string::npos)
      << read_file(out);
}

TEST_F(CliTest, StatusJsonMatchesTheState) {
  const std::string name = unique_name("cli:st:");
  const std::string marker = temp_file("started");
  std::string out;
  const pid_t pid = start_sleeper(name, marker, &out);
  ASSERT_TRUE(started(marker)) << read_file(out);

  auto r = cli({"status", "--redis", server_.url(), "--json", name});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.front(), '{') << r.output;
  EXPECT_NE(r.output.find("\"name\":\"" + name + "\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"kind\":\"ambiguous\",\"candidates\":[\"lock\",\"fair-lock\"]"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\"state\":\"held\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"count\":1}"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"lease_ms\":"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"queue\":[]"), std::string::npos) << r.output;

  r = cli({"status", "--redis", server_.url(), name});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(hold count 1)"), std::string::npos) << r.output;

  ::kill(pid, SIGTERM);
  EXPECT_EQ(finish(pid, 10s), 128 + SIGTERM);
  r = cli({"status", "--redis", server_.url(), "--json", name});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"kind\":\"none\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"state\":\"free\""), std::string::npos) << r.output;
}

TEST_F(CliTest, StatusReadsOtherKinds) {
  const std::string sem = unique_name("cli:sem:");
  server_.command({"SET", sem, "3"});
  auto r = cli({"status", "--redis", server_.url(), "--json", sem});
  EXPECT_NE(r.output.find("\"kind\":\"ambiguous\",\"candidates\":[\"semaphore\","),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\"permits\":3"), std::string::npos) << r.output;

  const std::string rw = unique_name("cli:rw:");
  server_.command({"HSET", rw, "mode", "read", "uuid-a:1", "2", "uuid-b:7", "1"});
  r = cli({"status", "--redis", server_.url(), "--json", rw});
  EXPECT_NE(r.output.find("\"kind\":\"read-write-lock\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"mode\":\"read\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("{\"owner\":\"uuid-a:1\",\"count\":2}"), std::string::npos) << r.output;

  const std::string fair = unique_name("cli:fair:");
  server_.command({"HSET", fair, "uuid-a:1", "1"});
  server_.command({"RPUSH", "redisson_lock_queue:{" + fair + "}", "uuid-b:2"});
  server_.command({"ZADD", "redisson_lock_timeout:{" + fair + "}", "99999999999999", "uuid-b:2"});
  r = cli({"status", "--redis", server_.url(), "--json", fair});
  EXPECT_NE(r.output.find("\"queue\":[{\"owner\":\"uuid-b:2\",\"deadline_ms\":99999999999999"),
            std::string::npos)
      << r.output;

  const std::string odd = "cli:\"quote\"\n";
  server_.command({"SET", odd, "x"});
  r = cli({"status", "--redis", server_.url(), "--json", odd});
  EXPECT_NE(r.output.find("\"name\":\"cli:\\\"quote\\\"\\n\""), std::string::npos) << r.output;
}

TEST_F(CliTest, UnlockForce) {
  const std::string name = unique_name("cli:unlock:");
  server_.command({"HSET", name, "someone-else:1", "1"});
  auto r = cli({"unlock", "--redis", server_.url(), name});
  EXPECT_EQ(r.exit_code, 64) << r.output;
  EXPECT_NE(r.output.find("--force"), std::string::npos) << r.output;
  EXPECT_TRUE(key_exists(name));

  r = cli({"unlock", "--redis", server_.url(), "--force", name});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "released\n");
  EXPECT_FALSE(key_exists(name));
  r = cli({"unlock", "--redis", server_.url(), "--force", name});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "was not locked\n");
}

TEST_F(CliTest, BenchDriverWritesEventsAndOneJsonLine) {
  const std::string key = unique_name("cli:bench:");
  const std::string events = temp_file("events.txt");
  const auto r = bench({"driver",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        std::to_string(server_.port()),
                        "--key",
                        key,
                        "--iterations",
                        "25",
                        "--warmup",
                        "3",
                        "--cs",
                        "counter",
                        "--counter-key",
                        key + ":n",
                        "--events",
                        events,
                        "--worker-id",
                        "4",
                        "--retry-delay-ms",
                        "5",
                        "--think-us",
                        "100"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "exactly one line:\n" << r.output;
  EXPECT_EQ(
      r.output.rfind("{\"driver\":\"redisync\",\"library\":\"redisync\",\"library_version\":", 0),
      0u)
      << r.output;
  for (const char* part : {"\"settings\":{", "\"worker_id\":4", "\"completed\":25",
                           "\"acquire_failures\":0", "\"errors\":0", "\"warmup\":3"}) {
    EXPECT_NE(r.output.find(part), std::string::npos) << part << " in " << r.output;
  }
  std::istringstream lines(read_file(events));
  long long t0, t1, t2, t3;
  int count = 0;
  while (lines >> t0 >> t1 >> t2 >> t3) {
    EXPECT_LE(t0, t1);
    EXPECT_LE(t1, t2);
    EXPECT_LE(t2, t3);
    ++count;
  }
  EXPECT_EQ(count, 25);
  EXPECT_EQ(server_.command({"GET", key + ":n"}).as_string(), "25");
  EXPECT_FALSE(key_exists(key));

  const auto bad = bench({"driver", "--port", std::to_string(server_.port()), "--kind", "paxos"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("--kind must be one of"), std::string::npos) << bad.output;
}

TEST_F(CliTest, BenchDriverRunsEveryLockKind) {
  for (const char* kind : {"lock", "fair", "fenced", "spin", "rw-write"}) {
    const std::string key = unique_name(std::string("cli:kind:") + kind + ":");
    const std::string events = temp_file(std::string("events-") + kind + ".txt");
    const auto r = bench({"driver", "--port", std::to_string(server_.port()), "--key", key,
                          "--iterations", "20", "--warmup", "2", "--cs", "counter", "--events",
                          events, "--retry-delay-ms", "2", "--kind", kind});
    ASSERT_EQ(r.exit_code, 0) << kind << ": " << r.output;
    EXPECT_NE(r.output.find(std::string("\"kind\":\"") + kind + "\""), std::string::npos)
        << r.output;
    EXPECT_NE(r.output.find("\"completed\":20"), std::string::npos) << r.output;
    EXPECT_EQ(server_.command({"GET", key + ":counter"}).as_string(), "20") << kind;
    EXPECT_FALSE(key_exists(key)) << kind;
  }
}

// bench/run's floor of a handoff by notification: three drivers pass a token round a ring of
// count-down latches. The turns must come strictly in ring order, never two at once, and end
// when each driver has had its count (a stalled ring would end at the deadline, short).
TEST_F(CliTest, BenchDriverLatchRingPassesTheTokenInRingOrder) {
  const std::string key = unique_name("cli:ring:");
  const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  constexpr int kWorkers = 3;
  constexpr int kTurns = 15;
  std::vector<std::string> events(kWorkers), outputs(kWorkers);
  std::vector<pid_t> pids(kWorkers);
  // Worker 1 starts last, after the common start instant: worker 0 passes it the token before
  // it has armed its latch (a slow start under load did that). The drivers must wait for each
  // other to be armed, or the ring stalls at worker 1 until the deadline.
  for (const int i : {0, 2, 1}) {
    const auto index = static_cast<std::size_t>(i);
    if (i == 1) std::this_thread::sleep_for(1500ms);
    events[index] = temp_file("ring-events.txt");
    pids[index] = start_cli({"driver",
                             "--port",
                             std::to_string(server_.port()),
                             "--key",
                             key,
                             "--kind",
                             "latch-ring",
                             "--workers",
                             std::to_string(kWorkers),
                             "--worker-id",
                             std::to_string(i),
                             "--iterations",
                             std::to_string(kTurns),
                             "--cs",
                             "counter",
                             "--events",
                             events[index],
                             "--start-at-ns",
                             std::to_string(now_ns + 1'000'000'000),
                             "--deadline-ns",
                             std::to_string(now_ns + 21'000'000'000)},
                            &outputs[index], bench_path());
  }
  struct Turn {
    long long t1, t2;
    int worker;
  };
  std::vector<Turn> turns;
  for (int i = 0; i < kWorkers; ++i) {
    const auto index = static_cast<std::size_t>(i);
    EXPECT_EQ(finish(pids[index], 30s), 0) << read_file(outputs[index]);
    const std::string out = read_file(outputs[index]);
    EXPECT_NE(out.find("\"completed\":" + std::to_string(kTurns)), std::string::npos) << out;
    EXPECT_NE(out.find("\"kind\":\"latch-ring\""), std::string::npos) << out;
    std::istringstream lines(read_file(events[index]));
    long long t0, t1, t2, t3;
    while (lines >> t0 >> t1 >> t2 >> t3) turns.push_back({t1, t2, i});
  }
  ASSERT_EQ(turns.size(), std::size_t{kWorkers * kTurns});
  std::sort(turns.begin(), turns.end(), [](const Turn& a, const Turn& b) { return a.t1 < b.t1; });
  for (std::size_t n = 0; n < turns.size(); ++n) {
    EXPECT_EQ(turns[n].worker, static_cast<int>(n % kWorkers)) << "turn " << n << " out of order";
    if (n > 0) {
      EXPECT_GE(turns[n].t1, turns[n - 1].t2) << "turns " << n - 1 << " and " << n << " overlap";
    }
  }
  EXPECT_EQ(server_.command({"GET", key + ":counter"}).as_string(),
            std::to_string(kWorkers * kTurns));

  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--workers", "1", "--worker-id", "0"},
        std::vector<std::string>{"--workers", "3", "--worker-id", "3"}}) {
    std::vector<std::string> args{"driver", "--port", std::to_string(server_.port()), "--kind",
                                  "latch-ring"};
    args.insert(args.end(), bad.begin(), bad.end());
    const auto r = bench(args);
    EXPECT_EQ(r.exit_code, 64) << r.output;
    EXPECT_NE(r.output.find("--kind latch-ring needs --workers >= 2"), std::string::npos)
        << r.output;
  }
}

TEST_F(CliTest, BenchDriverStopsAtTheDeadline) {
  const std::string key = unique_name("cli:deadline:");
  const auto now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  const auto start = std::chrono::steady_clock::now();
  const auto r =
      bench({"driver", "--port", std::to_string(server_.port()), "--key", key, "--iterations",
             "100000000", "--start-at-ns", std::to_string(now_ns + 200'000'000), "--deadline-ns",
             std::to_string(now_ns + 700'000'000)});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_NE(r.output.find("\"errors\":0"), std::string::npos) << r.output;
}

TEST_F(CliTest, DemoLosesNoUpdates) {
  // Uses its own private redis-server (the fixture's stays idle).
  const auto r = cli({"demo", "--workers", "3", "--seconds", "4"}, 60s);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\nlost updates: 0\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("killed (SIGKILL inside its critical section)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("recovery after kill"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("not observed"), std::string::npos) << r.output;
}

TEST_F(CliTest, UnreachableServerExits69) {
  const std::string url = "redis://127.0.0.1:" + std::to_string(unused_port());
  auto r = cli({"status", "--redis", url, "x"});
  EXPECT_EQ(r.exit_code, 69) << r.output;
  EXPECT_NE(r.output.find("cannot reach Redis"), std::string::npos) << r.output;
  // An acquire retries whole attempts on top of the executor's resends (about 22 s with the
  // defaults); no retries keeps this test short.
  r = cli({"run", "--redis", url + "?retry_attempts=0", "x", "--", "true"});
  EXPECT_EQ(r.exit_code, 69) << r.output;
  EXPECT_NE(r.output.find("cannot reach Redis"), std::string::npos) << r.output;
}

TEST_F(CliTest, UsageErrorsExit64) {
  EXPECT_EQ(cli({}).exit_code, 64);
  EXPECT_EQ(cli({"no-such-subcommand"}).exit_code, 64);
  EXPECT_EQ(cli({"run", "--redis", server_.url(), "name"}).exit_code, 64);
  auto r = cli({"run", "--redis", server_.url(), "--wait", "5x", "name", "--", "true"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.output.find("--wait"), std::string::npos) << r.output;
  r = cli({"status", "--redis", "redis://host:notaport", "x"});
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.output.find("--redis"), std::string::npos) << r.output;
  EXPECT_EQ(cli({"demo", "--workers", "0"}).exit_code, 64);
  r = cli({"run", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("--wait"), std::string::npos);
}

// Issue 37: a bare number is ambiguous (flock(1) and timeout(1) read seconds, the CLI once read
// milliseconds): a usage error with a hint; units, decimals and compound forms are taken.
TEST_F(CliTest, BareDurationIsRefusedWithAHint) {
  const std::string name = unique_name("cli:dur:");
  auto r = cli({"run", "--redis", server_.url(), "--wait", "10", name, "--", "true"});
  EXPECT_EQ(r.exit_code, 64) << r.output;
  EXPECT_NE(r.output.find("--wait 10: give a unit, e.g. 10s or 10ms"), std::string::npos)
      << r.output;
  r = cli({"run", "--redis", server_.url(), "--wait", "1m30.5s", name, "--", "true"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// Issue 37: `run NAME grep -v x` without "--" runs `grep -v x` (as flock(1) would), not
// `grep x` with run's own -v; after --multi NAME..., "--" is needed, and its absence gets a hint.
TEST_F(CliTest, TheCommandsOwnOptionsAreItsOwnWithoutASeparator) {
  const std::string name = unique_name("cli:sep:");
  auto r = cli({"run", "--redis", server_.url(), name, "sh", "-c", "echo \"[$0]\"", "-v"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[-v]"), std::string::npos) << r.output;
  r = cli({"run", "--redis", server_.url(), "--multi", name + ":a", name + ":b", "ls", "--all"});
  EXPECT_EQ(r.exit_code, 64) << r.output;
  EXPECT_NE(r.output.find("the command's own options must follow '--'"), std::string::npos)
      << r.output;
}

TEST_F(CliTest, StatusShowsARateLimitersConfigurationAndWindow) {
  using redisync::RateType;
  const std::string name = unique_name("cli:rl:");
  redisync::Client client(server_.url());
  auto limiter = client.rate_limiter(name);
  ASSERT_TRUE(limiter.try_set_rate(RateType::overall, 5, std::chrono::minutes(1)));
  ASSERT_TRUE(limiter.try_acquire(2));
  ASSERT_TRUE(limiter.try_acquire(1));
  auto r = cli({"status", "--redis", server_.url(), "--json", name});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"kind\":\"rate-limiter\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"rate\":5,\"interval_ms\":60000,\"rate_type\":\"overall\","
                          "\"keep_alive_ms\":0"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\"windows\":[{\"client\":null,\"available\":2,\"granted\":3,"
                          "\"grants\":2}]"),
            std::string::npos)
      << r.output;
  r = cli({"status", "--redis", server_.url(), name});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("5 per 60000 ms (overall)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 available, 3 granted in the current interval"), std::string::npos)
      << r.output;
  EXPECT_EQ(limiter.available_permits(), 2);  // status changed nothing

  // Per client: one window per client that has one.
  const std::string per = unique_name("cli:rlpc:");
  auto pc = client.rate_limiter(per);
  ASSERT_TRUE(pc.try_set_rate(RateType::per_client, 3, std::chrono::minutes(1)));
  ASSERT_TRUE(pc.try_acquire(3));
  r = cli({"status", "--redis", server_.url(), "--json", per});
  EXPECT_NE(r.output.find("\"rate_type\":\"per-client\""), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("{\"client\":\"" + client.id() + "\",\"available\":0,\"granted\":3"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\"state\":\"limited\""), std::string::npos) << r.output;
}

}  // namespace
}  // namespace redisync::test
