// SPDX-License-Identifier: Apache-2.0
// Network and data-loss faults (issue 18): each worker reaches the lock server through its own
// fault proxy (tests/support/fault_proxy.h), so one holder can be partitioned, slowed down or
// lose a reply while the others still reach the server; the server's data can be flushed or
// evicted. Every case also runs the deliberately broken locks of chaos_worker.cpp (the
// negative control): for those the case asserts that the checker REPORTS a violation.
//
// The checker (history.h) counts an overlap as explained only if the earlier holder was told
// before the later one acquired (or a data-loss fault / a test-made pause explains it), with
// the stale holds bounded by the faults injected.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>

#include "chaos/chaos_case.h"
#include "chaos/chaos_run.h"
#include "lua/scripts.h"
#include "support/server_stats.h"

namespace redisync::chaos {
namespace {

using namespace std::chrono_literals;
using test::AfterDrop;
using test::Direction;

// KNOWN DEFECT SWITCH (issue 17 item 3). Today the library tells a holder its lock is lost
// only when a renewal times out or is refused, which can be after the lease ran out on the
// server; a partitioned holder is then told after another worker acquired. While this is
// true, the partition cases for the real kinds assert that the checker reports exactly that
// (overlaps whose earlier holder was told late, nothing else). Once the library keeps a local
// lease deadline and tells the holder before it passes, set this to false (or run with
// REDISYNC_CHAOS_LATE_NOTICE_FIXED=1): the cases must then pass outright.
constexpr bool kLostNoticeComesOnlyWithRenewalTimeout = false;  // the local lease deadline landed

bool late_notice_known() {
  const char* fixed = std::getenv("REDISYNC_CHAOS_LATE_NOTICE_FIXED");
  return kLostNoticeComesOnlyWithRenewalTimeout && !(fixed != nullptr && std::string(fixed) == "1");
}

// The worker whose connections the case faults: it holds for several renewal periods.
constexpr int kVictim = 0;

// At most 4 workers ($REDISYNC_CHAOS_WORKERS if smaller): the victim's long holds must leave
// every worker time to complete a section within the run.
int network_workers() {
  const char* env = std::getenv("REDISYNC_CHAOS_WORKERS");
  const int n = env != nullptr && *env != '\0' ? std::atoi(env) : 0;
  return n > 0 ? std::min(n, 4) : 4;
}

RunParams network_params(const std::string& kind, long victim_hold_ms) {
  RunParams p;
  p.kind = kind;
  p.proxied = true;
  p.workers = network_workers();
  p.watchdog_ms = 1000;  // renewal every ~333 ms
  p.wait_ms = 4000;      // longer than the victim's holds
  p.hold_ms = 5;
  p.worker_args[kVictim] = {"--hold-ms", std::to_string(victim_hold_ms)};
  return p;
}

// How the known late-notice defect may show in a case (see the switch above).
enum class Known {
  none,      // the case must pass
  must_show, // the case deterministically hits the defect: the checker must report it
  may_show,  // it may or may not hit it; nothing else may fail
};

// Finishes the run and checks it. Real kinds must pass; a broken kind must be caught.
Verdict finish(ChaosRun& run, const std::string& label, const std::string& faults,
               Known known = Known::none) {
  const auto exit_problems = run.finish();
  Verdict v = run.verdict(label, faults);
  const std::string& kind = run.params().kind;
  if (is_broken(kind)) {
    expect_caught(v, kind, label);
    return v;
  }
  EXPECT_TRUE(exit_problems.empty()) << join(exit_problems) << run.worker_logs();
  if (known != Known::none && !late_notice_known()) known = Known::none;
  if (known != Known::none && !(known == Known::may_show && v.ok())) {
    // Only the known defect may show: overlaps whose earlier holder was told too late.
    EXPECT_FALSE(v.ok()) << "the known late-notice defect did not show in " << label
                         << ": if issue 17 item 3 landed, flip kLostNoticeComesOnlyWithRenewalTimeout";
    for (const auto& p : v.problems) {
      const bool late = p.find("overlap without a timely lost-lock notice") != std::string::npos &&
                        p.find("after the later one acquired") != std::string::npos;
      const bool follows = p.find("lost updates but only") != std::string::npos ||
                           p.find("but the previous holder wrote") != std::string::npos;
      EXPECT_TRUE(late || follows) << "a failure other than the known late notice: " << p;
    }
    std::cout << "KNOWN FAILURE (late lost-lock notice) " << label << ": " << join(v.problems);
    return v;
  }
  EXPECT_TRUE(v.ok()) << join(v.problems) << run.worker_logs();
  return v;
}

// The victim's sections that the fault hit (closed after `from`).
std::vector<Section> victim_sections(const ChaosRun& run, long long from) {
  std::vector<Section> out;
  for (const auto& s : run.history().sections) {
    if (s.worker == kVictim && s.closed && s.section_end >= from) out.push_back(s);
  }
  return out;
}

// --- Partition: the holder's proxy blackholes both ways for two leases while it holds. ---
// It must be told before another worker acquires, and stop (skip its write).

class Partition : public ::testing::TestWithParam<const char*> {};

TEST_P(Partition, HolderIsToldBeforeAnotherAcquires) {
  const std::string kind = GetParam();
  RunParams p = network_params(kind, 2500);
  if (kind == "rw-mix" || kind == "lock-grant") {
    p.duration_ms = shorter_ms(4000);  // added later (chaos_case.h)
  }
  ChaosRun run(p);
  run.start();
  auto held = run.wait_in_section(kVictim, 5s);
  ASSERT_TRUE(held) << "the victim never acquired";
  std::this_thread::sleep_for(50ms);
  const long long cut = mono_ns();
  run.proxy(kVictim).set_blackhole(Direction::both, true);
  run.note_fault();
  std::this_thread::sleep_for(2000ms);
  run.proxy(kVictim).set_blackhole(Direction::both, false);
  const Verdict v = finish(run, "partition/" + kind, "blackhole holder 2 s:1", Known::must_show);
  if (is_broken(kind) || late_notice_known()) return;
  for (const auto& s : victim_sections(run, cut)) {
    if (s.seq != held->seq) continue;
    EXPECT_NE(s.wrote, '1') << "the partitioned holder wrote after its lease ran out";
  }
  EXPECT_EQ(v.unexplained_overlaps, 0);
}

INSTANTIATE_TEST_SUITE_P(Kinds, Partition,
                         ::testing::Values("lock", "fair", "fenced", "rw-write", "multi", "rw-mix",
                                           "broken-norenew", "broken-ignore", "lock-grant"));

// --- Partition of a permit holder (semaphore of 2): it keeps its permit (no lease runs out:
// Semaphore permits have none, the PermitExpirableSemaphore's lease is 5 s, longer than the
// victim's holds); the others go on with the permit left, and never more than 2 are in use. ---

class PermitPartition : public ::testing::TestWithParam<const char*> {};

TEST_P(PermitPartition, OthersGoOnAndNeverMoreThanNPermitsInUse) {
  const std::string kind = GetParam();
  RunParams p = network_params(kind, 2500);
  p.watchdog_ms = 5000;  // the permit lease (pes)
  p.duration_ms = shorter_ms(4000);
  ChaosRun run(p);
  run.start();
  ASSERT_TRUE(run.wait_in_section(kVictim, 5s)) << "the victim never acquired";
  std::this_thread::sleep_for(50ms);
  run.proxy(kVictim).set_blackhole(Direction::both, true);
  run.note_fault();
  std::this_thread::sleep_for(2000ms);
  run.proxy(kVictim).set_blackhole(Direction::both, false);
  const Verdict v = finish(run, "partition/" + kind, "blackhole holder 2 s:1");
  EXPECT_EQ(v.overlaps, 0);
  EXPECT_EQ(v.max_holds_at_once, run.params().permits)
      << "the permits were never all in use: the bound was not exercised";
}

INSTANTIATE_TEST_SUITE_P(Kinds, PermitPartition, ::testing::Values("semaphore", "pes"));

// --- Slow network: once the victim holds (for several renewal periods), its requests and
// replies are delayed 150 ms + up to 350 ms each way (round trips 300-1000 ms: around the
// renewal period, up to the 1 s timeout); the others see 10 + up to 20 ms. ---
// Today a renewal whose reply comes back after the lease ran out tells the holder late (the
// known defect, issue 17 item 3); the case may show it and nothing else.

class SlowNetwork : public ::testing::TestWithParam<const char*> {};

TEST_P(SlowNetwork, ExclusionHoldsWithRenewalsNearTheTimeout) {
  const std::string kind = GetParam();
  ChaosRun run(network_params(kind, 2000));
  run.start();
  ASSERT_TRUE(run.wait_in_section(kVictim, 5s)) << "the victim never acquired";
  for (int w = 0; w < run.params().workers; ++w) {
    if (w == kVictim) {
      run.proxy(w).set_delay(Direction::both, 150ms, 350ms);
    } else {
      run.proxy(w).set_delay(Direction::both, 10ms, 20ms);
    }
  }
  run.note_fault();
  // Off again after 2.5 s: with a slow link the victim would lose every race for the unfair
  // kinds (starvation is not what this case is about).
  std::this_thread::sleep_for(2500ms);
  for (int w = 0; w < run.params().workers; ++w) run.proxy(w).clear();
  const Verdict v = finish(run, "slow-network/" + kind,
                           "delay holder 150+0..350 ms each way, others 10+0..20, for 2.5 s:1",
                           Known::may_show);
  if (!is_broken(kind)) {
    EXPECT_EQ(v.lost_updates, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, SlowNetwork,
                         ::testing::Values("lock", "fair", "fenced", "broken-norenew"));

// --- Lost release reply: the release runs on the server, its reply never arrives (the
// connection stalls, or is reset). The holder retries; it must not report a failure for the
// release that happened, nor release a lock someone else took meanwhile. A stalled
// connection is given up at the release's first timeout and the release resent on a fresh
// one (answered from its release record); the local lease deadline that passes meanwhile is
// not reported, since the confirmed release shows the hold was intact until it ran (this was
// a false loss report before: the lost-lock callback and LockLostError). ---

struct LostReply {
  const char* kind;
  AfterDrop after;
};
// Names the case in gtest's listing (and so in ctest's test names), instead of its bytes.
void PrintTo(const LostReply& p, std::ostream* os) {
  *os << p.kind << (p.after == AfterDrop::stall ? " stall" : " reset");
}

class LostReleaseReply : public ::testing::TestWithParam<LostReply> {};

TEST_P(LostReleaseReply, RetriedReleaseNeitherFailsNorFreesAnotherHolder) {
  const std::string kind = GetParam().kind;
  const AfterDrop after = GetParam().after;
  RunParams p = network_params(kind, 20);
  p.workers = 0;   // short holds only: the default size ($REDISYNC_CHAOS_WORKERS or 8)
  p.hold_ms = 20;  // a later holder is still inside its section when a stale release lands
  // The broken lock "repairs" a failed unlock() by deleting the lock whoever holds it. The
  // library now resends a release whose reply is late on a fresh connection, so unlock() no
  // longer fails here; without resends (0) it fails at the first timeout and the repair runs.
  if (kind == "broken-release") p.retry_attempts = 0;
  ChaosRun run(p);
  const int victims = std::min(2, run.params().workers);
  for (int w = 0; w < victims; ++w) {
    // Every release script carries its release record key "redisson_unlock_latch:...".
    run.proxy(w).drop_reply({.command = "EVALSHA", .arg_containing = "redisson_unlock_latch"}, 2,
                            after);
    run.note_fault();
  }
  run.start();
  const std::string mode = after == AfterDrop::stall ? "stall" : "reset";
  const Verdict v = finish(run, "lost-release-reply-" + mode + "/" + kind,
                           "release reply dropped + " + mode + ":" + std::to_string(victims));
  long long dropped = 0;
  for (int w = 0; w < victims; ++w) dropped += run.proxy(w).stats().dropped_replies;
  EXPECT_GE(dropped, 1) << "no release reply was dropped: the case tested nothing";
  if (is_broken(kind)) return;
  // No hold was lost (no lease can run out in 20 ms sections): any loss report is false.
  const History h = run.history();
  int false_losses = 0;  // sections whose release ran but which reported "lost"
  for (const auto& s : h.sections) {
    if (s.closed && s.outcome == "lost") ++false_losses;
  }
  EXPECT_EQ(false_losses, 0) << "a release that ran on the server was reported as a lost lock";
  EXPECT_EQ(v.lost_callbacks, 0)
      << "the lost-lock handler was told of a hold that was released while held";
  for (const auto& [what, n] : v.errors) {
    EXPECT_EQ(what.rfind("release:", 0), std::string::npos)
        << n << " releases reported " << what << " (the release had run on the server)";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, LostReleaseReply,
    ::testing::Values(LostReply{"lock", AfterDrop::reset}, LostReply{"lock", AfterDrop::stall},
                      LostReply{"fair", AfterDrop::stall}, LostReply{"fenced", AfterDrop::stall},
                      LostReply{"broken-release", AfterDrop::stall},
                      LostReply{"lock-grant", AfterDrop::stall}),
    [](const ::testing::TestParamInfo<LostReply>& p) {
      std::string name = std::string(p.param.kind) +
                         (p.param.after == AfterDrop::stall ? "_stall" : "_reset");
      for (char& c : name) {
        if (c == '-') c = '_';
      }
      return name;
    });

// --- FLUSHALL while a holder holds: the server forgets the lock. The holder is told (late
// is all a lease can do: reported, never silent), nobody waits forever. ---

class Flushall : public ::testing::TestWithParam<const char*> {};

TEST_P(Flushall, HolderIsToldAndNobodyWaitsForever) {
  const std::string kind = GetParam();
  ChaosRun run(network_params(kind, 1500));
  run.start();
  const long d = run.params().duration_ms;
  run.wait_every_worker_held(ms(d / 2));  // as in KillHolder (chaos_test.cpp)
  int flushes = 0;
  long long first = 0;
  for (const long at : {d / 5, d / 2}) {
    run.sleep_until(ms(at));
    if (!run.wait_in_section(kVictim, 3s)) continue;
    std::this_thread::sleep_for(100ms);
    if (first == 0) first = mono_ns();
    ASSERT_FALSE(run.lock_server().command({"FLUSHALL"}).is_error());
    run.note_fault(/*data_loss=*/true);
    ++flushes;
  }
  ASSERT_GE(flushes, 1) << "the victim never held the lock when a flush was due";
  const Verdict v = finish(run, "flushall/" + kind, "FLUSHALL while held:" + std::to_string(flushes));
  if (is_broken(kind)) return;
  EXPECT_EQ(v.hung_attempts, 0);
  // Every flushed hold of the victim ended told: the lost-lock callback or LockLostError.
  const History h = run.history();
  int told = 0;
  for (const auto& s : victim_sections(run, first)) {
    if (s.outcome == "lost") ++told;
  }
  const auto callbacks = h.lost_callbacks.find(kVictim);
  EXPECT_TRUE(told > 0 || (callbacks != h.lost_callbacks.end() && callbacks->second > 0))
      << "the flushed holder was never told";
}

INSTANTIATE_TEST_SUITE_P(Kinds, Flushall, ::testing::Values("lock", "fair", "broken-ignore"));

// --- Eviction: maxmemory 8 MB with allkeys-lru, a filler writing 256 KB values through the
// middle of the run evicts lock keys; evictions are data-loss faults. ---

class Eviction : public ::testing::TestWithParam<const char*> {};

TEST_P(Eviction, EvictedLocksAreReportedAndNobodyWaitsForever) {
  const std::string kind = GetParam();
  RunParams p = network_params(kind, 600);
  p.proxied = false;
  if (is_broken(kind)) p.duration_ms = shorter_ms(3000);
  p.lock_server_args = {"--maxmemory", "8mb", "--maxmemory-policy", "allkeys-lru"};
  ChaosRun run(p);
  run.start();
  const long d = run.params().duration_ms;
  run.wait_every_worker_held(ms(d / 2));  // as in KillHolder (chaos_test.cpp)
  run.sleep_until(ms(d / 4));
  const std::string blob(256 * 1024, 'x');
  for (int i = 0; i < 400; ++i) {
    run.lock_server().command({"SET", "filler:" + std::to_string(i), blob});
    if (i % 40 == 39) std::this_thread::sleep_for(100ms);
  }
  const std::string evicted_field = test::info_field(run.lock_server(), "stats", "evicted_keys");
  ASSERT_FALSE(evicted_field.empty());
  const long long evicted = std::stoll(evicted_field);
  ASSERT_GT(evicted, 0) << "nothing was evicted: the case tested nothing";
  // Each eviction may have taken a lock key: a data-loss fault each (filler keys included,
  // so this bound is loose; the notice-timing rule still applies to every overlap).
  for (long long i = 0; i < evicted; ++i) run.note_fault(/*data_loss=*/true);
  const Verdict v = finish(run, "eviction/" + kind,
                           "allkeys-lru evictions:" + std::to_string(evicted));
  if (!is_broken(kind)) {
    EXPECT_EQ(v.hung_attempts, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, Eviction, ::testing::Values("lock", "fair", "broken-ignore"));

// --- Failover that loses the acquire: the lock server has a replica, the workers do not
// WAIT for it (--replica-ack 0). The replication stream is cut, the victim acquires on the
// master only (checked on the replica), then the master dies and the replica is promoted;
// the workers' address moves to it (fail_over()). The promoted replica never had the lock,
// so another worker may get it while the victim still holds: that double hold must be
// reported (the victim told, before or after the other acquired: a data-loss fault explains
// a late notice), never silent. The Sentinel-driven version, with WAIT refusing the acquire,
// is the integration test LostAcquireFailover.* (tests/integration/sentinel_test.cpp). ---

class LostAcquireFailover : public ::testing::TestWithParam<const char*> {};

TEST_P(LostAcquireFailover, DoubleHoldIsReportedNeverSilent) {
  const std::string kind = GetParam();
  RunParams p = network_params(kind, 1500);
  p.duration_ms = shorter_ms(is_broken(kind) ? 3000 : 4000);
  p.replica = true;
  p.replica_ack = false;
  ChaosRun run(p);
  run.replication_proxy().set_blackhole(Direction::both, true);
  const long long cut = mono_ns();
  run.start();
  // The victim's first section comes after the cut: its lock write never reaches the replica.
  auto held = run.wait_in_section(kVictim, 5s);
  ASSERT_TRUE(held) << "the victim never acquired";
  ASSERT_GT(held->acquired, cut);
  std::this_thread::sleep_for(100ms);
  const std::string& name = run.lock_name();
  ASSERT_EQ(run.lock_server().command({"HEXISTS", name, held->field}).as_integer(), 1)
      << "the victim does not hold the lock on the master";
  ASSERT_EQ(run.replica().command({"EXISTS", name}).as_integer(), 0)
      << "the replica got the lock write: the failover would not lose it";
  run.fail_over();
  const Verdict v = finish(run, "failover-lost-acquire/" + kind,
                           "replication cut, master SIGKILL, replica promoted:1");
  if (is_broken(kind)) return;
  EXPECT_EQ(v.unexplained_overlaps, 0);
  // The victim's lost hold was reported: the lost-lock callback during it, or LockLostError.
  const History h = run.history();
  bool told = false;
  for (const auto& s : h.sections) {
    if (s.worker != kVictim || s.seq != held->seq) continue;
    ASSERT_TRUE(s.closed);
    told = s.outcome == "lost";
    if (auto t = h.lost_times.find(kVictim); t != h.lost_times.end()) {
      for (const long long at : t->second) told = told || (at >= s.acquired && at <= s.released);
    }
  }
  EXPECT_TRUE(told) << "the victim's hold, lost in the failover, was never reported";
}

INSTANTIATE_TEST_SUITE_P(Kinds, LostAcquireFailover,
                         ::testing::Values("lock", "fair", "broken-ignore"));

// --- Long holds with faults during renewal: while the victim holds for several renewal
// periods its connections are reset, new connections refused for 300 ms, and a renewal's
// reply dropped. Renewals are retried within the lease; if the lock is lost the holder is
// told before anyone else acquires. ---

class FaultsDuringRenewal : public ::testing::TestWithParam<const char*> {};

TEST_P(FaultsDuringRenewal, LongHoldSurvivesOrIsToldInTime) {
  const std::string kind = GetParam();
  ChaosRun run(network_params(kind, 3000));
  const std::string renew_sha =
      run.lock_server().command({"SCRIPT", "LOAD", std::string(lua::lock_renew.source)}).as_string();
  run.start();
  auto held = run.wait_in_section(kVictim, 5s);
  ASSERT_TRUE(held) << "the victim never acquired";
  test::FaultProxy& proxy = run.proxy(kVictim);
  proxy.drop_reply({.command = "EVALSHA", .first_arg = renew_sha}, 1, AfterDrop::reset);
  run.note_fault();
  std::this_thread::sleep_for(500ms);
  proxy.reset_connections();
  run.note_fault();
  std::this_thread::sleep_for(400ms);
  proxy.set_refuse(true);
  proxy.reset_connections();
  run.note_fault();
  std::this_thread::sleep_for(300ms);
  proxy.set_refuse(false);
  const Verdict v = finish(run, "faults-during-renewal/" + kind,
                           "renew reply dropped:1,reset:2,refuse 300 ms:1");
  if (is_broken(kind)) return;
  EXPECT_EQ(v.unexplained_overlaps, 0);
  EXPECT_EQ(v.lost_updates, 0);
}

INSTANTIATE_TEST_SUITE_P(Kinds, FaultsDuringRenewal,
                         ::testing::Values("lock", "fair", "fenced", "broken-norenew"));

// --- RedLock over three servers: the holder's link to one of them (a minority) blackholes
// while it holds for several renewal periods. The quorum keeps the lock: no overlap. ---

#if __has_include("redisync/red_lock.h")
// Not in sanitizer builds: instrumented RedLock workers (three servers each) complete too few
// sections within the smaller sanitizer run for the progress check (3 in one TSan run); the
// plain build runs it full size.
#if !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
TEST(RedLockMinorityPartition, HolderKeepsTheQuorumAndExclusionHolds) {
  RunParams p = network_params("redlock", 1500);
  // RedLock waiters retry on their own schedule (no release message across servers), so a
  // victim that re-acquires 2 ms after each release starves them all (seen: workers 1-3 timed
  // out every 4 s wait); it pauses 300 ms between sections instead.
  p.worker_args[kVictim].insert(p.worker_args[kVictim].end(), {"--think-ms", "300"});
  p.lock_servers = 3;
  p.timeout_ms = 500;
  ChaosRun run(p);  // proxies sit on each worker's link to server 0 only
  run.start();
  auto held = run.wait_in_section(kVictim, 5s);
  ASSERT_TRUE(held) << "the victim never acquired";
  run.proxy(kVictim).set_blackhole(Direction::both, true);
  run.note_fault();
  std::this_thread::sleep_for(2000ms);
  run.proxy(kVictim).set_blackhole(Direction::both, false);
  const Verdict v = finish(run, "partition-1-of-3/redlock", "blackhole holder's link to 1 of 3:1");
  EXPECT_EQ(v.overlaps, 0);
  EXPECT_EQ(v.lost_updates, 0);
}
#endif
#endif

}  // namespace
}  // namespace redisync::chaos
