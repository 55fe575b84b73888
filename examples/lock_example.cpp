// SPDX-License-Identifier: Apache-2.0
// redisync::Lock with the standard guards and with redisync::Guard.
//
//   example_lock [redis://127.0.0.1:6379]
#include <redisync/redisync.h>

#include <chrono>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
  const std::string url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  try {
    // [lock]
    redisync::Client client(url);
    auto lock = client.lock("example:orders");

    // A Lock is a TimedLockable: std::lock_guard and std::unique_lock work. Without a lease
    // the Client's watchdog renews the lock while it is held.
    int counter = 0;
    std::vector<std::thread> workers;
    for (int i = 0; i < 4; ++i) {
      workers.emplace_back([&] {
        for (int j = 0; j < 25; ++j) {
          std::lock_guard guard(lock);  // each thread is its own owner
          ++counter;                    // only one holder at a time, in any process
        }
      });
    }
    for (auto& w : workers) w.join();

    // Wait at most 2 s; std::unique_lock tells whether it got the lock.
    std::unique_lock timed(lock, std::defer_lock);
    if (!timed.try_lock_for(2s)) return 1;
    timed.unlock();

    // unlock() never throws (std guards call it from a noexcept destructor): a lock lost
    // while held (lease expired during a long pause) goes to the lost-lock handler. For
    // the outcome, unlock_checked() throws it and release() returns it, as here.
    {
      redisync::Guard guard(lock);
      ++counter;
      const redisync::ReleaseResult result = guard.release();
      if (!result) std::cerr << "the lock was lost while held\n";
    }
    // [end]
    std::cout << "counter = " << counter << "\n";
    return counter == 101 && !lock.is_locked() ? 0 : 1;
  } catch (const redisync::Error& e) {
    std::cerr << "example_lock: " << e.what() << "\n";
    return 1;
  }
}
