// SPDX-License-Identifier: Apache-2.0
// redisync::FairLock: waiters get the lock in the order they asked for it.
//
//   example_fair_lock [redis://127.0.0.1:6379]
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
    // [fair_lock]
    redisync::Client client(url);
    auto lock = client.fair_lock("example:queue");
    lock.lock();  // held while three waiters line up

    std::mutex order_mutex;
    std::vector<int> order;
    std::vector<std::thread> waiters;
    for (int i = 0; i < 3; ++i) {
      waiters.emplace_back([&, i] {
        std::lock_guard guard(lock);  // FIFO: first to ask, first served
        std::lock_guard record(order_mutex);
        order.push_back(i);
      });
      // Let waiter i join the queue before i + 1 asks (the queue is a Redis list).
      const auto give_up = std::chrono::steady_clock::now() + 10s;
      while (client.execute({"LLEN", "redisson_lock_queue:{example:queue}"}).integer < i + 1 &&
             std::chrono::steady_clock::now() < give_up) {
        std::this_thread::sleep_for(10ms);
      }
    }
    lock.unlock();
    for (auto& w : waiters) w.join();
    // [end]
    std::cout << "served in order:";
    for (int i : order) std::cout << " " << i;
    std::cout << "\n";
    return order == std::vector<int>{0, 1, 2} ? 0 : 1;
  } catch (const redisync::Error& e) {
    std::cerr << "example_fair_lock: " << e.what() << "\n";
    return 1;
  }
}
