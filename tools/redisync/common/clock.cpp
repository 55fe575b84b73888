// SPDX-License-Identifier: Apache-2.0
#include "clock.h"

#include <thread>

namespace redisync::cli {

void sleep_until_ns(std::int64_t target_ns) {
  constexpr std::int64_t kSpinNs = 1'000'000;
  for (;;) {
    const std::int64_t left = target_ns - monotonic_ns();
    if (left <= 0) return;
    if (left > kSpinNs) {
      std::this_thread::sleep_for(std::chrono::nanoseconds(left - kSpinNs));
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace redisync::cli
