// SPDX-License-Identifier: Apache-2.0
// redisync::ReadWriteLock: many readers at once, or one writer. std::shared_lock takes the
// read side, std::unique_lock / std::lock_guard the write side.
//
//   example_read_write_lock [redis://127.0.0.1:6379]
#include <redisync/redisync.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
  const std::string url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  try {
    // [read_write_lock]
    redisync::Client client(url);
    auto rw = client.read_write_lock("example:catalog");

    // Three readers hold the read lock at the same time: each waits, holding it, until all
    // three are in (at most 10 s).
    std::atomic<int> reading{0};
    std::atomic<bool> all_in{false};
    std::vector<std::thread> readers;
    for (int i = 0; i < 3; ++i) {
      readers.emplace_back([&] {
        std::shared_lock read(rw);  // readers share the lock
        ++reading;
        const auto give_up = std::chrono::steady_clock::now() + 10s;
        while (reading < 3 && std::chrono::steady_clock::now() < give_up) {
          std::this_thread::sleep_for(10ms);
        }
        if (reading == 3) all_in = true;
      });
    }
    for (auto& r : readers) r.join();

    {
      std::lock_guard write(rw);  // exclusive: no reader, no other writer
      // ... update the catalog ...
    }
    // [end]
    std::cout << (all_in ? "3 readers held the lock at once\n" : "readers did not share\n");
    return all_in && !rw.write_lock().is_locked() ? 0 : 1;
  } catch (const redisync::Error& e) {
    std::cerr << "example_read_write_lock: " << e.what() << "\n";
    return 1;
  }
}
