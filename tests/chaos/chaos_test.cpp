// The chaos suite: P worker processes contend for one lock while faults are injected; the
// history checker (history.h) then verifies exclusion, the counter, tokens, progress and that
// no waiter hung. Each case prints one "chaos <case>: ..." summary line with its figures.
// Size: $REDISYNC_CHAOS_WORKERS (default 8) workers for $REDISYNC_CHAOS_MS (default 6000) ms.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "chaos/chaos_run.h"

namespace redisync::chaos {
namespace {

using namespace std::chrono_literals;

std::string join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// Finishes the run and checks it; returns the verdict for case-specific assertions.
Verdict finish_and_check(ChaosRun& run, const std::string& label, const std::string& faults) {
  const auto exit_problems = run.finish();
  EXPECT_TRUE(exit_problems.empty()) << join(exit_problems) << run.worker_logs();
  Verdict v = run.verdict(label, faults);
  EXPECT_TRUE(v.ok()) << join(v.problems) << run.worker_logs();
  return v;
}

std::chrono::milliseconds ms(long n) { return std::chrono::milliseconds(n); }

// --- (1) SIGKILL of a holder: the lock frees within its lease; the others go on. ---

class KillHolder : public ::testing::TestWithParam<const char*> {};

TEST_P(KillHolder, LockRecoveredWithinLeaseAndExclusionHolds) {
  ChaosRun run({.kind = GetParam(), .watchdog_ms = 1000});
  run.start();
  const long d = run.params().duration_ms;
  int kills = 0;
  for (const long at : {d / 4, d / 2}) {
    run.sleep_until(ms(at));
    auto held = run.stop_a_holder(2s);
    ASSERT_TRUE(held) << "no holder could be caught inside its critical section";
    run.kill_worker(*held);
    ++kills;
  }
  const Verdict v = finish_and_check(run, std::string("kill-holder/") + GetParam(),
                                     "SIGKILL holder:" + std::to_string(kills));
  EXPECT_EQ(v.killed_open, kills);
  EXPECT_EQ(v.overlaps, 0);
  EXPECT_EQ(v.lost_updates, 0);
}

INSTANTIATE_TEST_SUITE_P(Kinds, KillHolder,
                         ::testing::Values("lock", "fair", "fenced", "rw-write", "multi"));

// --- (2) SIGSTOP of a holder past its lease, then SIGCONT: the holder is told. ---

class StopHolder : public ::testing::TestWithParam<const char*> {};

TEST_P(StopHolder, StaleHolderIsToldAndFencingRejectsItsWrite) {
  const std::string kind = GetParam();
  // The resumed holder writes without looking for a notice first (the unsafe window fencing
  // exists for); a worker that heeds the notice would skip the write when the watchdog's
  // callback wins the race against it.
  ChaosRun run({.kind = kind, .watchdog_ms = 1000, .heed_notice = false});
  run.stop_self_after(ms(run.params().duration_ms / 6));
  run.start();
  // The first worker in a section after a sixth of the run stops itself between reading and
  // writing.
  auto held = run.wait_self_stopped(10s);
  ASSERT_TRUE(held) << "no worker stopped inside a critical section";
  std::this_thread::sleep_for(2500ms);  // 2.5 leases: the lock expires and others take it
  run.continue_worker(*held);
  const Verdict v = finish_and_check(run, "stop-holder/" + kind, "SIGSTOP holder 2.5 s:1");

  // The stale section: its unlock() raised LockLostError, the lost-lock callback ran, and
  // with fencing its write (token older than the newer holders') was refused.
  const History h = run.history();
  const Section* stale = nullptr;
  for (const auto& s : h.sections) {
    if (s.worker == held->worker && s.seq == held->seq) stale = &s;
  }
  ASSERT_NE(stale, nullptr);
  ASSERT_TRUE(stale->closed);
  EXPECT_EQ(stale->outcome, "lost") << "unlock() after the pause did not raise LockLostError";
  const auto callbacks = h.lost_callbacks.find(held->worker);
  EXPECT_TRUE(callbacks != h.lost_callbacks.end() && callbacks->second >= 1)
      << "the lost-lock callback did not run in the paused holder";
  if (kind == "fenced") {
    EXPECT_EQ(stale->wrote, 'r') << "the stale holder's write was not rejected by its token";
    EXPECT_EQ(v.lost_updates, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, StopHolder,
                         ::testing::Values("lock", "fair", "fenced", "rw-write", "multi"));

// --- (3) redis-server killed and restarted on the same port (no persistence). ---
// Clients reconnect and resubscribe; no waiter hangs past its wait; exclusion holds except
// where the restart lost the lock key, and then the holder is told (LockLostError).

class RestartServer : public ::testing::TestWithParam<const char*> {};

TEST_P(RestartServer, ClientsRecoverAndLossesAreReported) {
  ChaosRun run({.kind = GetParam(), .watchdog_ms = 1500, .timeout_ms = 500});
  run.start();
  const long d = run.params().duration_ms;
  int restarts = 0;
  for (const long at : {d / 4, d / 2}) {
    run.sleep_until(ms(at));
    run.lock_server().restart();
    run.note_fault(/*data_loss=*/true);
    ++restarts;
  }
  finish_and_check(run, std::string("restart-server/") + GetParam(),
                   "redis-server SIGKILL+restart:" + std::to_string(restarts));
}

// FencedLock is left out on purpose: a restart without persistence also loses the token
// counter, so tokens restart from 1 (docs/safety.md); the checker would rightly flag it.
INSTANTIATE_TEST_SUITE_P(Kinds, RestartServer, ::testing::Values("lock", "fair"));

// --- (4) redis-server paused (SIGSTOP) for 2 s: TimeoutError surfaces, nothing hangs. ---

TEST(PauseServer, TimeoutsSurfaceAndNothingHangs) {
  // No resends, so a timeout reaches the caller instead of being retried away.
  ChaosRun run({.kind = "lock", .watchdog_ms = 1500, .timeout_ms = 500, .retry_attempts = 0});
  run.start();
  run.sleep_until(ms(run.params().duration_ms / 3));
  run.lock_server().pause();
  run.note_fault();
  std::this_thread::sleep_for(2s);
  run.lock_server().resume();
  const Verdict v = finish_and_check(run, "pause-server/lock", "redis-server SIGSTOP 2 s:1");
  int timeouts = 0;
  for (const auto& [what, n] : v.errors) {
    if (what.find("TimeoutError") != std::string::npos) timeouts += n;
  }
  EXPECT_GE(timeouts, 1) << "no TimeoutError surfaced while the server was paused";
}

// --- (5) SCRIPT FLUSH and CLIENT KILL TYPE pubsub: recovered transparently. ---

TEST(ScriptFlushAndPubsubKill, RecoveredTransparently) {
  ChaosRun run({.kind = "lock", .watchdog_ms = 1500});
  run.start();
  const long d = run.params().duration_ms;
  int flushes = 0;
  int kills = 0;
  for (int i = 1; i <= 4; ++i) {
    run.sleep_until(ms(d * i / 6));
    if (i % 2 == 1) {
      ASSERT_FALSE(run.lock_server().command({"SCRIPT", "FLUSH"}).is_error());
      run.note_fault();
      ++flushes;
    } else {
      ASSERT_FALSE(run.lock_server().command({"CLIENT", "KILL", "TYPE", "pubsub"}).is_error());
      run.note_fault();
      ++kills;
    }
  }
  const Verdict v = finish_and_check(
      run, "script-flush+pubsub-kill/lock",
      "SCRIPT FLUSH:" + std::to_string(flushes) + ",CLIENT KILL TYPE pubsub:" + std::to_string(kills));
  EXPECT_TRUE(v.errors.empty()) << "errors surfaced to callers; recovery should be transparent";
  EXPECT_EQ(v.overlaps, 0);
  EXPECT_EQ(v.lost_updates, 0);
  EXPECT_EQ(v.lost_reported, 0);
}

// --- (6) RedLock over three servers, one killed and restarted. ---

#if __has_include("redisync/red_lock.h")
TEST(RedLockServerRestart, QuorumKeepsExclusion) {
  ChaosRun run({.kind = "redlock", .lock_servers = 3, .watchdog_ms = 1500, .timeout_ms = 500});
  run.start();
  run.sleep_until(ms(run.params().duration_ms / 3));
  run.lock_server(1).kill();
  run.note_fault(/*data_loss=*/true);  // one of three members forgets its locks
  run.sleep_until(ms(run.params().duration_ms * 2 / 3));
  run.lock_server(1).restart();
  const Verdict v = finish_and_check(run, "redlock-restart-one-of-3", "redis-server 1/3 SIGKILL, restart:1");
  EXPECT_EQ(v.overlaps, 0);
  EXPECT_EQ(v.lost_updates, 0);
}
#endif

}  // namespace
}  // namespace redisync::chaos
