// SPDX-License-Identifier: Apache-2.0
// redisync::MultiLock (all of several locks, as one) and redisync::RedLock (a majority of
// locks on independent servers).
//
//   example_multi_lock URL1 URL2 URL3   (three independent servers)
#include <redisync/redisync.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

using namespace std::chrono_literals;

int main(int argc, char** argv) {
  std::vector<std::string> urls;
  for (int i = 1; i < argc; ++i) urls.emplace_back(argv[i]);
  if (urls.size() != 3) {
    std::cerr << "usage: example_multi_lock URL1 URL2 URL3 (three independent servers)\n";
    return 64;
  }
  try {
    // [multi_lock]
    redisync::Client a(urls[0]);
    redisync::Client b(urls[1]);
    redisync::Client c(urls[2]);

    // Move stock between two warehouses: both locks or neither (members of any kind).
    redisync::MultiLock both{a.lock("example:stock:east"), b.fair_lock("example:stock:west")};
    {
      std::unique_lock guard(both);
      // ... move the stock ...
    }

    // RedLock: acquired when a majority (2 of 3) of independent servers grant it.
    redisync::RedLock leader{a.lock("example:leader"), b.lock("example:leader"),
                             c.lock("example:leader")};
    const bool led = leader.try_lock_for(2s, 10s);  // wait 2 s, hold 10 s
    if (led) {
      std::cout << "leader for " << leader.validity().count() << " ms more\n";
      leader.unlock();
    }
    // [end]
    const bool ok = led && !a.lock("example:stock:east").is_locked() &&
                    !a.lock("example:leader").is_locked() && leader.quorum() == 2;
    return ok ? 0 : 1;
  } catch (const redisync::Error& e) {
    std::cerr << "example_multi_lock: " << e.what() << "\n";
    return 1;
  }
}
