// SPDX-License-Identifier: Apache-2.0
// Connection throughput and latency through the public Client API: pipelined PING and
// EVALSHA with a sliding window of requests in flight (window 1 = async round trip), and
// sequential blocking round trips.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "bench_util.h"
#include "redisync/client.h"

namespace {

constexpr std::size_t kBatch = 10'000;  // requests per benchmark iteration
constexpr std::size_t kKeys = 1'000;    // distinct keys for EVALSHA

// The shape of the lock-acquire script, reduced to a plain "exists" test.
constexpr const char* kLockScript =
    "if redis.call('exists', KEYS[1]) == 0 then "
    "redis.call('hincrby', KEYS[1], ARGV[2], 1) "
    "redis.call('pexpire', KEYS[1], ARGV[1]) "
    "return nil end "
    "return redis.call('pttl', KEYS[1])";

// Runs `batch` requests through `pump` per iteration; reports items/s and µs per request.
void RunPump(benchmark::State& state, bench::Pump& pump, std::size_t batch) {
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    if (!pump.run(batch)) {
      state.SkipWithError(pump.error().c_str());
      return;
    }
  }
  const std::chrono::duration<double, std::micro> elapsed =
      std::chrono::steady_clock::now() - start;
  const auto ops = state.iterations() * static_cast<std::int64_t>(batch);
  state.SetItemsProcessed(ops);
  state.counters["us_per_op"] = elapsed.count() / static_cast<double>(ops);
}

// Window 1 is a plain round trip: a smaller batch keeps an iteration short.
std::size_t BatchFor(std::size_t window) { return window == 1 ? kBatch / 10 : kBatch; }

void BM_PipelinedPing(benchmark::State& state) {
  try {
    redisync::Client client(bench::server_url());
    client.execute({"PING"});  // connect outside the timed loop
    const auto window = static_cast<std::size_t>(state.range(0));
    bench::Pump pump(client, window,
                     [](std::size_t) { return std::vector<std::string>{"PING"}; });
    RunPump(state, pump, BatchFor(window));
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}
BENCHMARK(BM_PipelinedPing)->Arg(1)->Arg(16)->Arg(64)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_PipelinedEvalsha(benchmark::State& state) {
  try {
    redisync::Client client(bench::server_url());
    const std::string sha = client.execute({"SCRIPT", "LOAD", kLockScript}).str;
    // Keys are made up front so the loop measures the client, not string formatting.
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < kKeys; ++i) keys.push_back("bench:" + std::to_string(i));
    const auto window = static_cast<std::size_t>(state.range(0));
    bench::Pump pump(client, window, [&](std::size_t i) {
      return std::vector<std::string>{"EVALSHA", sha, "1", keys[i % kKeys], "10000", "owner"};
    });
    RunPump(state, pump, BatchFor(window));
    std::vector<std::string> del{"DEL"};
    del.insert(del.end(), keys.begin(), keys.end());
    client.execute(del);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}
BENCHMARK(BM_PipelinedEvalsha)->Arg(16)->Arg(64)->UseRealTime()->Unit(benchmark::kMillisecond);

// One blocking execute() at a time: the round trip a caller of the blocking API sees,
// including the hand-off to and from the I/O thread.
void BM_SequentialPing(benchmark::State& state) {
  try {
    redisync::Client client(bench::server_url());
    client.execute({"PING"});
    const std::vector<std::string> ping{"PING"};
    for (auto _ : state) {
      benchmark::DoNotOptimize(client.execute(ping));
    }
    state.SetItemsProcessed(state.iterations());
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}
BENCHMARK(BM_SequentialPing)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
