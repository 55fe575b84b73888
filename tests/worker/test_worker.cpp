// A worker process for multi-process integration tests (mutual exclusion across processes,
// SIGKILL of a holder). Usage:
//   test_worker counter URL NAME COUNTER_KEY ITERATIONS [WATCHDOG_MS]
//       ITERATIONS critical sections: lock, GET counter, SET counter+1, unlock.
//   test_worker hold URL NAME [WATCHDOG_MS]
//       lock (watchdog mode), print "held", then sleep until killed.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>

#include "redisync/redisync.h"

namespace {

redisync::Config make_config(const std::string& url, int argc, char** argv, int wd_index) {
  auto cfg = redisync::Config::from_url(url);
  if (argc > wd_index) cfg.lock_watchdog_timeout = redisync::Duration{std::stol(argv[wd_index])};
  return cfg;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: test_worker counter|hold URL NAME ...\n";
    return 64;
  }
  const std::string mode = argv[1];
  try {
    if (mode == "counter" && argc >= 6) {
      redisync::Client client(make_config(argv[2], argc, argv, 6));
      auto lock = client.lock(argv[3]);
      const std::string counter = argv[4];
      const int iterations = std::stoi(argv[5]);
      for (int i = 0; i < iterations; ++i) {
        std::lock_guard guard(lock);
        auto value = client.execute({"GET", counter});
        const long long n = value.is_nil() ? 0 : std::stoll(value.str);
        client.execute({"SET", counter, std::to_string(n + 1)});
      }
      return 0;
    }
    if (mode == "hold") {
      redisync::Client client(make_config(argv[2], argc, argv, 4));
      auto lock = client.lock(argv[3]);
      lock.lock();
      std::cout << "held" << std::endl;
      for (int i = 0; i < 600; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "test_worker: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "test_worker: bad arguments\n";
  return 64;
}
