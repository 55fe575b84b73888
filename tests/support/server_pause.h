// SPDX-License-Identifier: Apache-2.0
// Running a call while a test server is stopped (SIGSTOP) for a while: what was sent waits in
// the socket and runs when the server resumes.
#pragma once

#include <chrono>
#include <thread>

#include "support/redis_server.h"

namespace redisync::test {

/// Stops `server`, runs `body` while another thread resumes the server after `pause`, and
/// returns what `body` returned once both are done.
template <class F>
auto while_server_paused(RedisServer& server, std::chrono::milliseconds pause, F body) {
  server.pause();
  std::jthread waker([&server, pause] {
    std::this_thread::sleep_for(pause);
    server.resume();
  });
  auto result = body();
  waker.join();
  return result;
}

}  // namespace redisync::test
