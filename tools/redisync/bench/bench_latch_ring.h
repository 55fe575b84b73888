// SPDX-License-Identifier: Apache-2.0
// `redisync-bench driver --kind latch-ring`: the floor of a handoff by notification, for
// bench/run to set beside the locks' handoffs in the same run.
//
// Not a lock: a token passed round a ring of --workers driver processes through count-down
// latches. Worker i waits on latch "<key>:ring:<i>"; passing the token counts down the next
// worker's latch, one script that publishes "0", and the next worker's wait returns on that
// message with no round trip of its own. That is what a direct handoff (a grant) does, minus
// a lock's bookkeeping: no lock protocol on Redis pub/sub and this client can hand over faster.
//
// It offers the lock calls the bench driver makes, so the driver's timing is unchanged:
// lock() waits for the token, unlock() passes it on.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "redisync/client.h"
#include "redisync/config.h"
#include "redisync/count_down_latch.h"

namespace redisync::cli {

class LatchRing {
 public:
  /// Arms this worker's latch (count 1), except worker 0's: worker 0 holds the token first.
  /// Then waits (at most 30 s, else CliError) until all `workers` of the run `run_id` (the
  /// drivers' common start instant) have armed theirs, so none is armed after the token was
  /// passed to it.
  LatchRing(Client& client, const std::string& key, std::int64_t worker, std::int64_t workers,
            std::int64_t run_id);

  /// Waits for the token without limit.
  void lock(Duration lease);
  /// Waits up to `wait` for the token; false if it did not come.
  bool try_lock_for(Duration wait, Duration lease);
  /// Passes the token to the next worker.
  void unlock();
  /// After an error in a section: the token is passed on all the same, or the ring stops.
  void release() { unlock(); }

 private:
  void arm_after_wait();
  void wait_for_the_others(const std::string& armed, std::int64_t workers);

  Client& client_;
  // Set by the I/O thread when re-arming failed; reported by the next wait (without the
  // count the ring would stall at this worker).
  std::shared_ptr<std::atomic<bool>> arm_failed_ = std::make_shared<std::atomic<bool>>(false);
  CountDownLatch mine_;
  CountDownLatch next_;
};

}  // namespace redisync::cli
