// SPDX-License-Identifier: Apache-2.0
// Issue 17 item 6: `redisync run` left grandchildren running. The command now runs in its own
// process group: a lost lock signals the whole group, and a SIGKILLed `run` takes the whole
// group along (its watcher sees the pipe from `run` close).
#include <future>

#include "cli_support.h"
#include "redisync/redisync.h"

namespace redisync::test {
namespace {

class CliProcessGroupTest : public CliTest {
 protected:
  // Starts `run` with a shell that puts a grandchild in the background and waits for it; the
  // grandchild's pid lands in a file. Returns run's pid and the grandchild's. `url`: the
  // server's URL with options (default: the plain one).
  std::pair<pid_t, pid_t> start_with_grandchild(const std::vector<std::string>& extra,
                                                const std::string& name, std::string* out,
                                                const std::string& grandchild = "sleep 1000",
                                                const std::string& url = "") {
    const std::string pid_file = temp_file("grandchild.pid");
    std::vector<std::string> args{"run", "--redis", url.empty() ? server_.url() : url};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), {name, "--", "sh", "-c",
                             grandchild + " & echo $! > " + pid_file + ".tmp; mv " + pid_file +
                                 ".tmp " + pid_file + "; wait"});
    const pid_t run = start_cli(args, out);
    pid_t child = -1;
    EXPECT_TRUE(wait_until(
        [&] {
          std::ifstream in(pid_file);
          return static_cast<bool>(in >> child);
        },
        10s))
        << read_file(*out);
    return {run, child};
  }

  // A grandchild the code under test failed to stop must not outlive the test.
  static void reap_leftover(pid_t pid) {
    if (pid > 0 && alive(pid)) ::kill(pid, SIGKILL);
  }

  // Whether `pid` still runs (a zombie counts as gone: it has exited).
  static bool alive(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return false;
    const auto paren = line.rfind(')');
    return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
  }
};

TEST_F(CliProcessGroupTest, LostLockTerminatesTheGrandchildToo) {
  const std::string name = unique_name("cli:pg:lost:");
  std::string out;
  const auto started = start_with_grandchild({"--watchdog-timeout", "900ms"}, name, &out);
  const pid_t run = started.first;
  const pid_t grandchild = started.second;
  ASSERT_GT(grandchild, 0);
  ASSERT_TRUE(alive(grandchild));
  server_.command({"DEL", name});
  EXPECT_EQ(finish(run, 15s), 76) << read_file(out);
  EXPECT_TRUE(wait_until([&] { return !alive(grandchild); }, 10s))
      << "grandchild " << grandchild << " still runs after the lock was lost";
  reap_leftover(grandchild);
}

TEST_F(CliProcessGroupTest, GrandchildIgnoringSigtermIsKilledAfterTheGracePeriod) {
  const std::string name = unique_name("cli:pg:stubborn:");
  std::string out;
  const auto started = start_with_grandchild(
      {"--watchdog-timeout", "900ms"}, name, &out, "sh -c 'trap \"\" TERM; exec sleep 1000'");
  const pid_t run = started.first;
  const pid_t grandchild = started.second;
  ASSERT_GT(grandchild, 0);
  server_.command({"DEL", name});
  EXPECT_EQ(finish(run, 20s), 76) << read_file(out);
  EXPECT_TRUE(wait_until([&] { return !alive(grandchild); }, 10s))
      << "grandchild " << grandchild << " ignoring SIGTERM survived the grace period";
  reap_leftover(grandchild);
}

// A stopped `run` (SIGSTOP, or hung) cannot renew the lease, and its command would run on
// after the lease ended, beside the next holder. The watcher ends the command first: when the
// next holder gets the lock, nothing of the stopped run's command runs any more.
TEST_F(CliProcessGroupTest, StoppedRunHasItsCommandEndedBeforeTheNextHolderGetsTheLock) {
  const std::string name = unique_name("cli:pg:stopped:");
  std::string out;
  const auto started = start_with_grandchild({"--watchdog-timeout", "1500ms"}, name, &out);
  const pid_t run = started.first;
  const pid_t grandchild = started.second;
  ASSERT_GT(grandchild, 0);
  ASSERT_TRUE(alive(grandchild));
  ::kill(run, SIGSTOP);
  {
    redisync::Client next(server_.url());
    auto lock = next.lock(name);
    ASSERT_TRUE(lock.try_lock_for(20s));
    EXPECT_FALSE(alive(grandchild))
        << "the stopped run's command still runs while the next holder has the lock";
    lock.unlock();
  }
  ::kill(run, SIGCONT);
  EXPECT_EQ(finish(run, 15s), 76) << read_file(out);
  EXPECT_NE(read_file(out).find("lost"), std::string::npos) << read_file(out);
  reap_leftover(grandchild);
}

// The same with a command that ignores SIGTERM: the watcher SIGKILLs the group after the grace
// period, although `run` stays stopped.
TEST_F(CliProcessGroupTest, StoppedRunsCommandIgnoringSigtermIsKilledAfterTheGracePeriod) {
  const std::string name = unique_name("cli:pg:stopped-stubborn:");
  std::string out;
  const auto started = start_with_grandchild({"--lease", "1s"}, name, &out,
                                             "sh -c 'trap \"\" TERM; exec sleep 1000'");
  const pid_t run = started.first;
  const pid_t grandchild = started.second;
  ASSERT_GT(grandchild, 0);
  ::kill(run, SIGSTOP);
  EXPECT_TRUE(wait_until([&] { return !alive(grandchild); }, 15s))
      << "grandchild " << grandchild << " ignoring SIGTERM outlived its stopped run's lease";
  ::kill(run, SIGCONT);
  EXPECT_EQ(finish(run, 15s), 76) << read_file(out);
  reap_leftover(grandchild);
}

// The same in grant mode (issue 36): a waiting run granted the lock holds it on the server
// with the releaser's grant lease (9 s here) until its extension to its own lease (60 s) lands,
// a third of the grant lease later. A run stopped before that must have its command ended
// before the grant lease ends. The watcher used to get the hold's deadline plus a twentieth of
// run's own lease (3 s), which lies past the grant lease's end: the command ran on for seconds
// beside the next holder.
TEST_F(CliProcessGroupTest, StoppedRunGrantedTheLockHasItsCommandEndedBeforeTheGrantLeaseEnds) {
  const std::string name = unique_name("cli:pg:granted:");
  const std::string grant_url = server_.url() + "?handoff=grant";
  const std::string registrations = "redisync_lock_grant:{" + name + "}";
  redisync::Client holder(redisync::Config::from_url(grant_url + "&grant_lease=9000ms"));
  std::promise<void> locked;
  auto is_locked = locked.get_future();
  // The holder's thread: takes the lock, and releases it (granting it to run) once run waits
  // for it, registered for a grant.
  auto released = std::async(std::launch::async, [&] {
    auto held = holder.lock(name);
    held.lock();
    locked.set_value();
    const bool registered = wait_until(
        [&] { return server_.command({"ZCARD", registrations}).as_integer() > 0; }, 10s);
    held.unlock();
    return registered;
  });
  ASSERT_EQ(is_locked.wait_for(10s), std::future_status::ready);
  std::string out;
  const auto started = start_with_grandchild({"--lease", "60s"}, name, &out, "sleep 1000", grant_url);
  const pid_t run = started.first;
  const pid_t grandchild = started.second;
  ::kill(run, SIGSTOP);
  ASSERT_TRUE(released.get()) << "run never waited for a grant: " << read_file(out);
  ASSERT_GT(grandchild, 0);
  ASSERT_TRUE(alive(grandchild));
  // run was stopped before its extension: the lock still has the grant lease on the server.
  ASSERT_LE(server_.command({"PTTL", name}).as_integer(), 9000)
      << "run extended its grant before it was stopped; the case needs it stopped before";
  {
    redisync::Client next(server_.url());
    auto lock = next.lock(name);
    ASSERT_TRUE(lock.try_lock_for(20s));
    EXPECT_FALSE(alive(grandchild))
        << "the stopped run's command still runs while the next holder has the lock";
    lock.unlock();
  }
  ::kill(run, SIGCONT);
  EXPECT_EQ(finish(run, 15s), 76) << read_file(out);
  reap_leftover(grandchild);
}

TEST_F(CliProcessGroupTest, SigkilledRunTakesTheWholeGroupAlong) {
  const std::string name = unique_name("cli:pg:kill:");
  std::string out;
  const auto started = start_with_grandchild({}, name, &out);
  const pid_t run = started.first;
  const pid_t grandchild = started.second;
  ASSERT_GT(grandchild, 0);
  ASSERT_TRUE(alive(grandchild));
  ::kill(run, SIGKILL);
  EXPECT_EQ(finish(run), 128 + SIGKILL);
  EXPECT_TRUE(wait_until([&] { return !alive(grandchild); }, 10s))
      << "grandchild " << grandchild << " still runs after `run` was SIGKILLed";
  reap_leftover(grandchild);
}

TEST_F(CliProcessGroupTest, CommandRunsInItsOwnProcessGroup) {
  const std::string name = unique_name("cli:pg:own:");
  const std::string file = temp_file("pgids");
  const auto r = cli({"run", "--redis", server_.url(), name, "--", "sh", "-c",
                      "echo $(ps -o pgid= -p $$) $(ps -o pgid= -p $PPID) > " + file});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(read_file(file));
  long command_group = 0;
  long run_group = 0;
  ASSERT_TRUE(in >> command_group >> run_group) << read_file(file);
  EXPECT_NE(command_group, run_group);
}

}  // namespace
}  // namespace redisync::test
