// SPDX-License-Identifier: Apache-2.0
#include "bench_latch_ring.h"

#include <chrono>
#include <thread>

#include "cli_error.h"
#include "server_numbers.h"

namespace redisync::cli {
namespace {

std::string ring_latch(const std::string& key, std::int64_t worker) {
  return key + ":ring:" + std::to_string(worker);
}

}  // namespace

LatchRing::LatchRing(Client& client, const std::string& key, std::int64_t worker,
                     std::int64_t workers, std::int64_t run_id)
    : client_(client),
      mine_(client.count_down_latch(ring_latch(key, worker))),
      next_(client.count_down_latch(ring_latch(key, (worker + 1) % workers))) {
  client_.execute({"DEL", mine_.name()});
  if (worker != 0) client_.execute({"SET", mine_.name(), "1"});
  wait_for_the_others(key + ":ring:armed:" + std::to_string(run_id), workers);
}

// A worker that armed its latch late (a slow start under load) would reset it after the token
// had already been passed to it, and the ring would stall there until the deadline.
void LatchRing::wait_for_the_others(const std::string& armed, std::int64_t workers) {
  client_.execute({"INCR", armed});
  client_.execute({"PEXPIRE", armed, "600000"});  // a trace of the run, not kept for long
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  long long count = 0;
  while (std::chrono::steady_clock::now() < limit) {
    count = integer_text(client_.execute({"GET", armed}).str).value_or(0);
    if (count >= workers) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  throw CliError(kExitFailure, "bench driver: " + std::to_string(count) + " of " +
                                   std::to_string(workers) +
                                   " ring workers armed their latches within 30 s");
}

void LatchRing::lock(Duration) {
  mine_.wait();
  arm_after_wait();
}

bool LatchRing::try_lock_for(Duration wait, Duration) {
  if (!mine_.wait_for(wait)) return false;
  arm_after_wait();
  return true;
}

// Arms this worker's latch for its next turn while it holds the token. Sent without waiting
// for the reply, so it costs the handoff nothing; it reaches Redis before this worker's next
// count-down (one connection, in order), so before the token can come round again.
void LatchRing::arm_after_wait() {
  if (arm_failed_->load()) {
    throw CliError(kExitFailure, "bench driver: re-arming " + mine_.name() + " failed");
  }
  client_.async_execute({"SET", mine_.name(), "1"},
                        [failed = arm_failed_](std::exception_ptr error, Reply) {
                          if (error) failed->store(true);
                        });
}

void LatchRing::unlock() { next_.count_down(); }

}  // namespace redisync::cli
