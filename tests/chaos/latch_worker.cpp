// SPDX-License-Identifier: Apache-2.0
// The CountDownLatch worker of the chaos suite (tests/chaos/latch_chaos_test.cpp). Even ids
// wait on the latch `--name` (its count was set by the test) in waits of --wait-ms until
// released; odd ids count it down once every --think-ms, until --duration-ms ends. History
// lines: latch_history.h.
#include <chrono>
#include <string>
#include <thread>

#include "chaos/worker_common.h"
#include "redisync/redisync.h"

namespace redisync::chaos_worker {

int run_latch(const Options& o) {
  const HistoryFile history(o.history);
  auto cfg = redisync::Config::from_url(o.lock_urls.front());
  cfg.timeout = Duration{o.timeout_ms};
  cfg.retry_attempts = static_cast<int>(o.retry_attempts);
  cfg.retry_interval = Duration{200};
  cfg.reconnection_delay_max = Duration{200};
  redisync::Client client(cfg);
  auto latch = client.count_down_latch(o.name);
  const std::string id = std::to_string(o.id);
  const bool awaiter = o.id % 2 == 0;
  const long long deadline = mono_ns() + o.duration_ms * 1000000LL;
  for (long long seq = 0; mono_ns() < deadline; ++seq) {
    const std::string s = std::to_string(seq);
    const long long start = mono_ns();
    try {
      if (awaiter) {
        const bool released = latch.wait_for(std::chrono::milliseconds(o.wait_ms));
        history.line("W " + id + " " + s + " " + std::to_string(start) + " " +
                     std::to_string(mono_ns()) + (released ? " 1" : " 0"));
        if (released) break;
      } else {
        history.line("D " + id + " " + s + " " + std::to_string(start));
        latch.count_down();
        history.line("C " + id + " " + s + " " + std::to_string(mono_ns()));
        std::this_thread::sleep_for(std::chrono::milliseconds(o.think_ms));
      }
    } catch (const redisync::Error& e) {
      history.line("E " + id + " " + s + " " + std::to_string(start) + " " +
                   std::to_string(mono_ns()) + " " + error_class(e));
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return 0;
}

}  // namespace redisync::chaos_worker
