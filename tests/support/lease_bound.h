// SPDX-License-Identifier: Apache-2.0
// The promise of docs/safety.md as a check a test can run at any moment: for a hold a call
// reported as held, the Client's local deadline (Client::lease_deadline(), when its lost
// notice is due) is at or before the server's expiry of the hold's key (now + PTTL). A later
// local deadline means the holder may go on working after the server let another client in.
#pragma once

#include <chrono>
#include <string>

#include "redisync/client.h"
#include "support/redis_server.h"

namespace redisync::test {

/// Why `client`'s local lease deadline lies past the server's expiry of `key` now, or "" when
/// it does not. The client must hold nothing but `key`'s hold (lease_deadline() is the
/// earliest of all its holds). No deadline (holds nothing, or told it lost the hold) passes.
/// The server's expiry is taken at its latest (the clock read after PTTL answered, plus PTTL's
/// 1 ms rounding): a deadline reported is past it for certain.
inline std::string lease_bound_violation(const Client& client, RedisServer& server,
                                         const std::string& key) {
  using namespace std::chrono;
  const auto deadline = client.lease_deadline();
  if (!deadline) return "";
  const auto before = steady_clock::now();
  const long long pttl = server.command({"PTTL", key}).as_integer();
  const auto after = steady_clock::now();
  if (pttl == -1) return "";  // no expiry on the server: any local deadline is before it
  if (pttl == -2) {
    // Gone: the notice must be due already.
    if (*deadline <= after) return "";
    return key + " is gone on the server while the local deadline is " +
           std::to_string(duration_cast<milliseconds>(*deadline - after).count()) +
           " ms away";
  }
  const auto expiry = after + milliseconds(pttl + 1);
  if (*deadline <= expiry) return "";
  return "the local deadline is " +
         std::to_string(duration_cast<milliseconds>(*deadline - before).count()) +
         " ms away, the server's expiry of " + key + " " + std::to_string(pttl) + " ms";
}

}  // namespace redisync::test
