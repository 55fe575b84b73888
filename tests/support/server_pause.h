// SPDX-License-Identifier: Apache-2.0
// Running a call while a test server is stopped (SIGSTOP) for a while: what was sent waits in
// the socket and runs when the server resumes; and waiting until a client answers again.
#pragma once

#include <chrono>
#include <thread>

#include "redisync/client.h"
#include "redisync/errors.h"
#include "support/redis_server.h"
#include "support/test_util.h"

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

/// True once `client` answers PING with PONG again, within `limit` (errors meanwhile are
/// expected: a stalled connection is given up and a new one made).
inline bool answers_again(Client& client,
                          std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  return wait_until(
      [&] {
        try {
          return client.execute({"PING"}).str == "PONG";
        } catch (const Error&) {
          return false;
        }
      },
      limit, std::chrono::milliseconds(20));
}

}  // namespace redisync::test
