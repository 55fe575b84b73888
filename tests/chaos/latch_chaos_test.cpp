// SPDX-License-Identifier: Apache-2.0
// The chaos case for CountDownLatch: half the workers (even ids) wait on a latch of count C
// in bounded waits, the others count it down every 100 ms, and one or two counters are
// SIGKILLed mid-way. The latch checker (latch_history.h): no awaiter released before the
// C-th count-down began, none timed out on an open latch, no wait outlived its limit, every
// awaiter released.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "chaos/chaos_case.h"
#include "chaos/chaos_run.h"
#include "chaos/latch_history.h"
#include "redisync/redisync.h"

namespace redisync::chaos {
namespace {

constexpr long kCountEveryMs = 100;

TEST(LatchKillCounter, NoAwaiterReleasedEarlyNorLeftWaiting) {
  RunParams p;
  p.kind = "latch";
  p.duration_ms = shorter_ms(4000);
  p.wait_ms = 1000;
  p.think_ms = kCountEveryMs;  // the counters' pace (awaiters do not pause)
  ChaosRun run(p);
  const int workers = run.params().workers;
  ASSERT_GE(workers, 4) << "the latch case needs two awaiters and two counters";
  const long d = run.params().duration_ms;
  const int counters = workers / 2;  // odd ids
  // C: what the counters do in a third of the run, so the latch opens around the middle
  // even after the kills.
  const long long count = static_cast<long long>(counters) * (d / 3) / kCountEveryMs;
  {
    redisync::Client setter(redisync::Config::from_url(run.lock_server().url()));
    ASSERT_TRUE(setter.count_down_latch(run.lock_name()).try_set_count(count));
  }
  run.start();
  // Kill counter 1 a quarter in, and counter 3 too when two others remain.
  std::vector<int> victims{1};
  if (counters >= 4) victims.push_back(3);
  run.sleep_until(ms(d / 4));
  for (const int w : victims) run.kill_worker(w);
  const auto exit_problems = run.finish();
  EXPECT_TRUE(exit_problems.empty()) << join(exit_problems) << run.worker_logs();

  LatchExpectations expect;
  expect.count = count;
  for (int w = 0; w < workers; w += 2) expect.awaiters.push_back(w);
  expect.wait_ns = run.params().wait_ms * 1000000LL;
  expect.hang_slack_ns = run.params().hang_slack_ms * 1000000LL;
  const LatchVerdict v = check_latch(read_latch_history(run.history_path()), expect);
  std::cout << v.summary("kill-counter/latch") << " count=" << count << " workers=" << workers
            << " duration_ms=" << d << " faults={SIGKILL counter:" << victims.size() << "}"
            << std::endl;
  EXPECT_TRUE(v.ok()) << join(v.problems) << run.worker_logs();
  EXPECT_GE(v.count_downs_returned, count) << "the latch never opened: the case tested nothing";
}

}  // namespace
}  // namespace redisync::chaos
