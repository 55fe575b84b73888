// SPDX-License-Identifier: Apache-2.0
// Uncontended Lock costs through the blocking API: lock + unlock pairs (fixed lease and
// watchdog mode) and a failing try_lock on a lock another Client holds.
#include <benchmark/benchmark.h>

#include <chrono>
#include <exception>
#include <string>

#include "bench_util.h"
#include "redisync/client.h"
#include "redisync/lock.h"

namespace {

using Clock = std::chrono::steady_clock;

double MicrosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// lock(acquire) + unlock() per iteration; reports pairs/s and the mean of each half.
template <class Acquire>
void RunPairs(benchmark::State& state, const std::string& name, Acquire acquire) {
  try {
    redisync::Client client(bench::server_url());
    client.execute({"DEL", name});
    auto lock = client.lock(name);
    acquire(lock);  // warm-up: connect and load the scripts outside the timed loop
    lock.unlock();
    double lock_us = 0, unlock_us = 0;
    for (auto _ : state) {
      auto t0 = Clock::now();
      acquire(lock);
      lock_us += MicrosSince(t0);
      t0 = Clock::now();
      lock.unlock();
      unlock_us += MicrosSince(t0);
    }
    state.SetItemsProcessed(state.iterations());
    state.counters["lock_us"] = benchmark::Counter(lock_us, benchmark::Counter::kAvgIterations);
    state.counters["unlock_us"] =
        benchmark::Counter(unlock_us, benchmark::Counter::kAvgIterations);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void BM_UncontendedLockUnlock(benchmark::State& state) {
  RunPairs(state, "bench:lock:lease",
           [](redisync::Lock& lock) { lock.lock(std::chrono::seconds(10)); });
}
BENCHMARK(BM_UncontendedLockUnlock)->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_UncontendedWatchdogLockUnlock(benchmark::State& state) {
  RunPairs(state, "bench:lock:watchdog", [](redisync::Lock& lock) { lock.lock(); });
}
BENCHMARK(BM_UncontendedWatchdogLockUnlock)->UseRealTime()->Unit(benchmark::kMicrosecond);

// try_lock() on a lock held by another Client: one EVALSHA that returns the holder's PTTL.
void BM_TryLockHeld(benchmark::State& state) {
  const std::string name = "bench:lock:held";
  try {
    redisync::Client holder(bench::server_url());
    redisync::Client client(bench::server_url());
    holder.execute({"DEL", name});
    auto held = holder.lock(name);
    held.lock(std::chrono::seconds(60));
    auto lock = client.lock(name);
    if (lock.try_lock()) {  // also the warm-up
      state.SkipWithError("try_lock succeeded on a held lock");
      return;
    }
    for (auto _ : state) {
      if (lock.try_lock()) {
        state.SkipWithError("try_lock succeeded on a held lock");
        break;
      }
    }
    held.unlock();
    state.SetItemsProcessed(state.iterations());
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}
BENCHMARK(BM_TryLockHeld)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
