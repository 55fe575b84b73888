// SPDX-License-Identifier: Apache-2.0
// redisync::CountDownLatch: wait until N events have happened, in any process.
//
//   example_count_down_latch [redis://127.0.0.1:6379]
#include <redisync/redisync.h>

#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
  const std::string url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  try {
    // [count_down_latch]
    redisync::Client client(url);
    auto ready = client.count_down_latch("example:shards-loaded");
    ready.try_set_count(3);  // three shards to load

    std::vector<std::thread> loaders;
    for (int shard = 0; shard < 3; ++shard) {
      loaders.emplace_back([&] {
        // ... load the shard ...
        ready.count_down();
      });
    }
    const bool all_loaded = ready.wait_for(10s);  // woken by the last count_down
    for (auto& l : loaders) l.join();
    // [end]
    std::cout << (all_loaded ? "all shards loaded\n" : "timed out\n");
    return all_loaded && ready.count() == 0 ? 0 : 1;
  } catch (const redisync::Error& e) {
    std::cerr << "example_count_down_latch: " << e.what() << "\n";
    return 1;
  }
}
