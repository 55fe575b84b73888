// SPDX-License-Identifier: Apache-2.0
// redisync::Semaphore: at most N holders at once (here: 2 connections to a rate-limited API).
//
//   example_semaphore [redis://127.0.0.1:6379]
#include <redisync/redisync.h>

#include <atomic>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const std::string url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  try {
    // [semaphore]
    redisync::Client client(url);
    auto slots = client.semaphore("example:api-slots");
    slots.try_set_permits(2);  // sets the count once; false if it already exists

    std::atomic<int> inside{0};
    std::atomic<int> most{0};
    std::vector<std::thread> callers;
    for (int i = 0; i < 5; ++i) {
      callers.emplace_back([&] {
        slots.acquire();  // waits while both permits are taken
        const int now = ++inside;
        for (int seen = most; now > seen && !most.compare_exchange_weak(seen, now);) {
        }
        // ... call the API ...
        --inside;
        slots.release();  // permits are not owned: any process may release one
      });
    }
    for (auto& c : callers) c.join();
    // [end]
    std::cout << "at most " << most << " callers at once; " << slots.available_permits()
              << " permits free\n";
    const bool ok = most >= 1 && most <= 2 && slots.available_permits() == 2;
    slots.remove();
    return ok ? 0 : 1;
  } catch (const redisync::Error& e) {
    std::cerr << "example_semaphore: " << e.what() << "\n";
    return 1;
  }
}
