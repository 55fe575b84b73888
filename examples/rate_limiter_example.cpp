// SPDX-License-Identifier: Apache-2.0
// redisync::RateLimiter: at most N calls in any interval, for a whole fleet (here: 12 calls to
// a partner API allowing 5 per 500 ms, from 3 threads).
//
//   example_rate_limiter [redis://127.0.0.1:6379]
#include <redisync/redisync.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
  const std::string url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  try {
    // [rate_limiter]
    redisync::Client client(url);
    auto api = client.rate_limiter("example:partner-api");
    // At most 5 permits in any 500 ms, shared by every process using this name (Java's
    // RRateLimiter too). The first configuration wins; set_rate() overwrites it.
    api.try_set_rate(redisync::RateType::overall, 5, 500ms);

    std::atomic<int> calls{0};
    std::vector<std::thread> callers;
    for (int i = 0; i < 3; ++i) {
      callers.emplace_back([&] {
        for (int j = 0; j < 4; ++j) {
          api.acquire();  // sleeps exactly until a grant leaves the window (no polling)
          ++calls;        // ... call the API ...
        }
      });
    }
    for (auto& c : callers) c.join();

    // One round trip, never waits; else wait at most 2 s (false at once if nothing frees).
    const bool got = api.try_acquire() || api.try_acquire_for(1, 2s);
    api.release();  // unused permits may go back; this wakes this Client's waiters at once
    // [end]
    std::cout << calls << " calls made; a further permit " << (got ? "granted" : "refused")
              << "; " << api.available_permits() << " of 5 available now\n";
    const bool ok = calls == 12 && got;
    api.remove();
    return ok ? 0 : 1;
  } catch (const redisync::Error& e) {
    std::cerr << "example_rate_limiter: " << e.what() << "\n";
    return 1;
  }
}
