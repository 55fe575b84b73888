// SPDX-License-Identifier: Apache-2.0
// Lost release reply for the permit kinds (semaphore of 2, pes): the release runs on the
// server, its reply never arrives (the connection is reset, or stalls). The worker retries a
// release that reported a failure (chaos_worker.cpp), as an application would: a permit must
// never be given back twice, so never more than 2 holders at once.
//   - semaphore: the release carries a record and is resent by the library until answered
//     (src/sync/hold/recorded_step.cpp), so it reports success and the worker never retries;
//   - pes: the release is not resent (a false failure or loss report, never an overlap; see
//     the case's comment).
#include <gtest/gtest.h>

#include <iostream>
#include <string>

#include "chaos/chaos_case.h"
#include "chaos/chaos_run.h"
#include "lua/scripts.h"
#include "net/executor.h"

namespace redisync::chaos {
namespace {

using test::AfterDrop;

struct LostPermitReply {
  const char* kind;
  AfterDrop after;
};
// Names the case in gtest's listing (and so in ctest's test names), instead of its bytes.
void PrintTo(const LostPermitReply& p, std::ostream* os) {
  *os << p.kind << (p.after == AfterDrop::stall ? " stall" : " reset");
}

class LostPermitReleaseReply : public ::testing::TestWithParam<LostPermitReply> {};

TEST_P(LostPermitReleaseReply, NeverMoreThanNPermitsInUse) {
  const std::string kind = GetParam().kind;
  const AfterDrop after = GetParam().after;
  RunParams p;
  p.kind = kind;
  p.proxied = true;
  p.workers = 4;
  p.hold_ms = 20;        // other holders are inside when a doubled permit would be taken
  p.watchdog_ms = 5000;  // the permit lease (pes): longer than any hold here
  p.timeout_ms = 300;    // a stalled connection is given up within about a second
  p.duration_ms = shorter_ms(4000);
  ChaosRun run(p);
  const int victims = 2;
  // The script the library sends (its required sub-steps in front, resolved at build time).
  const auto& script =
      kind == "pes" ? lua::permit_expirable_semaphore_release : lua::semaphore_release;
  for (int w = 0; w < victims; ++w) {
    // The 2nd call: the 1st may be the EVALSHA answered NOSCRIPT (it did not run).
    run.proxy(w).drop_reply({.command = "EVALSHA", .first_arg = net::Executor::sha1_of(script)}, 2,
                            after);
    run.note_fault();
  }
  run.start();
  const auto exit_problems = run.finish();
  const std::string mode = after == AfterDrop::stall ? "stall" : "reset";
  const std::string label = "lost-permit-release-reply-" + mode + "/" + kind;
  const Verdict v = run.verdict(label, "release reply dropped + " + mode + ":2");
  EXPECT_TRUE(exit_problems.empty()) << join(exit_problems) << run.worker_logs();
  long long dropped = 0;
  for (int w = 0; w < victims; ++w) dropped += run.proxy(w).stats().dropped_replies;
  EXPECT_GE(dropped, 1) << "no release reply was dropped: the case tested nothing";
  EXPECT_EQ(v.overlaps, 0) << "a permit was given back twice: more than " << p.permits
                           << " holders at once\n"
                           << v.summary(label);
  EXPECT_LE(v.max_holds_at_once, p.permits);
  if (kind == "semaphore") {
    EXPECT_TRUE(v.ok()) << v.summary(label) << run.worker_logs();
    EXPECT_EQ(v.release_failures, 0) << "a release that ran reported a failure";
    EXPECT_EQ(v.lost_reported, 0);
    EXPECT_TRUE(v.errors.empty()) << v.summary(label);
  } else {
    // Known and documented (docs/safety.md), safe but noisy: the not-resent release reports
    // "may have run". After a reset the worker's retry finds the id gone and reports the hold
    // lost; after a stall every retry times out on the silent connection until the client
    // gives it up (2 x timeout + connect timeout, 10.6 s here: longer than the run), so the
    // worker keeps its permit and reports the release failed.
    EXPECT_LE(v.lost_reported, dropped);
    std::cout << "KNOWN (pes release not resent) " << mode << ": " << v.release_failures
              << " release failures, " << v.lost_reported << " holds reported lost, for " << dropped
              << " dropped replies\n";
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, LostPermitReleaseReply,
                         ::testing::Values(LostPermitReply{"semaphore", AfterDrop::reset},
                                           LostPermitReply{"semaphore", AfterDrop::stall},
                                           LostPermitReply{"pes", AfterDrop::reset},
                                           LostPermitReply{"pes", AfterDrop::stall}),
                         [](const ::testing::TestParamInfo<LostPermitReply>& p) {
                           return std::string(p.param.kind) +
                                  (p.param.after == AfterDrop::stall ? "_stall" : "_reset");
                         });

}  // namespace
}  // namespace redisync::chaos
