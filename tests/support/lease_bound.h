// SPDX-License-Identifier: Apache-2.0
// The promise of docs/safety.md as a check a test can run at any moment: for a hold a call
// reported as held, the Client's local deadline (Client::lease_deadline(), when its lost
// notice is due) is at or before the server's expiry of the hold's key (now + PTTL). A later
// local deadline means the holder may go on working after the server let another client in.
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>

#include "redisync/client.h"
#include "sync/client_core.h"
#include "support/redis_server.h"

namespace redisync::test {

/// Why the local lease deadline `read_deadline()` returns (a Client's, or its deadline for
/// one key; nullopt: holds nothing, or told it lost the hold) lies past the server's expiry of
/// `key`, or "" when it does not. The server's expiry is read just before and just after the
/// deadline, and the later of the two counts, each at its latest (the clock read after PTTL
/// answered, plus PTTL's 1 ms rounding): a Client cuts its deadline before it sends a shorter
/// lease, and the server extends a lease before the Client moves its deadline later, so a
/// deadline compared with one reading alone could be past an expiry that had just moved the
/// other way. A deadline reported is past the server's expiry for certain.
template <class ReadDeadline>
std::string deadline_past_expiry(ReadDeadline read_deadline, RedisServer& server,
                                 const std::string& key) {
  using namespace std::chrono;
  // The key's expiry on the server at its latest (never: no expiry; now: gone).
  const auto expiry = [&] {
    const long long pttl = server.command({"PTTL", key}).as_integer();
    const auto after = steady_clock::now();
    if (pttl == -1) return steady_clock::time_point::max();
    if (pttl == -2) return after;
    return after + milliseconds(pttl + 1);
  };
  const auto before = expiry();
  const std::optional<steady_clock::time_point> deadline = read_deadline();
  const auto read_at = steady_clock::now();
  const auto latest = std::max(before, expiry());
  if (!deadline || *deadline <= latest) return "";
  const auto away = duration_cast<milliseconds>(*deadline - read_at).count();
  if (latest <= steady_clock::now()) {
    return key + " is gone on the server while the local deadline is " + std::to_string(away) +
           " ms away";
  }
  return "the local deadline is " + std::to_string(away) + " ms away, the server's expiry of " +
         key + " " + std::to_string(duration_cast<milliseconds>(latest - read_at).count()) +
         " ms";
}

/// Why `client`'s local lease deadline (Client::lease_deadline()) lies past the server's
/// expiry of `key` now, or "". The client must hold nothing but `key`'s hold
/// (lease_deadline() is the earliest of all its holds).
inline std::string lease_bound_violation(const Client& client, RedisServer& server,
                                         const std::string& key) {
  return deadline_past_expiry([&] { return client.lease_deadline(); }, server, key);
}

/// The same for one of several locks `client` holds (a composite's member): its deadline
/// for `key`'s holds alone, read from the Client's watchdog on its I/O thread (internals, not
/// the API).
inline std::string key_lease_bound_violation(const Client& client, RedisServer& server,
                                             const std::string& key) {
  const auto& core = client.core();
  return deadline_past_expiry(
      [&] {
        return core->call<std::optional<std::chrono::steady_clock::time_point>>(
            [&](auto done) { done(nullptr, core->watchdog().next_deadline_of(key)); });
      },
      server, key);
}

}  // namespace redisync::test
