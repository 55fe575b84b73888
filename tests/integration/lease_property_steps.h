// SPDX-License-Identifier: Apache-2.0
// The steps of the lease property test (lease_property_test.cpp) and how a seeded schedule
// picks them. Pure: no server, no Client. The schedule is drawn online: each step is picked
// among those the state allows (who holds, who waits), so a seed replays the same choices as
// long as the calls answer the same way.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace redisync::test::lease_property {

/// splitmix64: the same numbers on every platform and standard library (a seed printed by
/// one run replays anywhere).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// 0..n-1.
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  int one_of(std::initializer_list<int> values) {
    return values.begin()[below(static_cast<int>(values.size()))];
  }

 private:
  std::uint64_t state_;
};

/// A is the client under test (behind the fault proxy); B is a competitor connected
/// directly (a waiter granted the lock on A's release, a holder A waits for).
enum class Op {
  a_lock,            // A: lock() or lock(lease), blocking (only when nobody else can hold it)
  a_try,             // A: try_lock() / try_lock_for(wait) / try_lock_for(wait, lease)
  a_async,           // A: async_try_lock(owner, wait, lease), awaited at once
  a_wait,            // A: async_try_lock in the background (granted by B's release)
  a_await,           // A: waits for its background acquire to complete
  a_release,         // A: release() of one hold
  b_wait,            // B: async_try_lock in the background (granted by A's release)
  b_await,           // B: waits for its background acquire to complete
  b_release,         // B: releases its hold
  b_release_race,    // B releases while A waits, just after the reply of A's next attempt is
                     // lost (v bit 0: the connection stalls, else resets; bit 1: A's grant
                     // message is held up 3 s): A's recheck, not the message, finds a grant
  drop_reply,        // proxy: the reply of A's next script call on the lock is lost; reset
  drop_reply_stall,  // proxy: the same, and the connection stalls until the next reset
  withhold,          // proxy: A's next script call on the lock is held back (not sent)
  deliver_withheld,  // the held-back copies run on the server now, late; connections reset
  delay,             // proxy: replies to A delayed by wait_ms (+ jitter) from now on (0: off)
  subscriber_delay,  // proxy: messages to A's subscriptions delayed by wait_ms (0: off)
  blackhole,         // proxy: nothing passes for wait_ms
  reset,             // proxy: A's connections reset
  sleep,             // nothing for wait_ms
};

struct Step {
  Op op = Op::sleep;
  int variant = 0;   // which call of the op (e.g. a_lock: 0 watchdog, 1 lease)
  int wait_ms = 0;   // a wait, a delay, a blackhole's or a sleep's length
  int lease_ms = 0;  // 0: the watchdog lease
  std::string text() const;
};

/// What the schedule knows of the state when it picks the next step.
struct View {
  bool reentrant = true;  // A may acquire again while it holds
  int a_holds = 0;
  bool a_pending = false;
  int b_holds = 0;
  bool b_pending = false;
  bool withheld = false;  // a request is held back on the proxy
};

/// The next step of a schedule.
Step next_step(Rng& rng, const View& view);

inline std::string Step::text() const {
  static const char* const names[] = {
      "a_lock",    "a_try",      "a_async",          "a_wait",   "a_await",
      "a_release", "b_wait",     "b_await",          "b_release", "b_release_race",
      "drop_reply",
      "drop_reply_stall", "withhold", "deliver_withheld", "delay",   "subscriber_delay",
      "blackhole", "reset",      "sleep"};
  std::string s = names[static_cast<int>(op)];
  s += "(v" + std::to_string(variant) + " wait " + std::to_string(wait_ms) + " lease " +
       std::to_string(lease_ms) + ")";
  return s;
}

inline Step next_step(Rng& rng, const View& v) {
  const int lease = rng.one_of({0, 0, 300, 700, 1500});  // 0: the watchdog lease
  const int wait = rng.one_of({0, 100, 400, 1000});
  // Weighted: the calls more often than the faults, and the step that completes a handoff
  // (a release while the other waits) more often when it can happen.
  std::vector<std::pair<Step, int>> allowed;
  const auto allow = [&](Step s, int weight) { allowed.emplace_back(s, weight); };
  const bool a_may_acquire = !v.a_pending && (v.reentrant || v.a_holds == 0);
  if (a_may_acquire) {
    // Unbounded only when nobody else can hold the lock (B neither holds nor waits).
    if (v.b_holds == 0 && !v.b_pending) allow({Op::a_lock, rng.below(2), 0, lease}, 2);
    allow({Op::a_try, rng.below(3), wait, lease}, 3);
    allow({Op::a_async, 0, wait, lease}, 2);
  }
  if (!v.a_pending && v.a_holds == 0) {
    allow({Op::a_wait, 0, rng.one_of({800, 2000, 4000}), lease}, v.b_holds > 0 ? 6 : 2);
  }
  if (v.a_pending) allow({Op::a_await, 0, 0, 0}, 1);
  if (v.a_holds > 0 && !v.a_pending) allow({Op::a_release, 0, 0, 0}, v.b_pending ? 8 : 4);
  if (!v.b_pending && v.b_holds == 0) {
    allow({Op::b_wait, 0, rng.one_of({500, 1500, 3000}), rng.one_of({0, 300, 1000})},
          v.a_holds > 0 ? 6 : 2);
  }
  if (v.b_pending) allow({Op::b_await, 0, 0, 0}, 1);
  if (v.b_holds > 0) allow({Op::b_release, 0, 0, 0}, v.a_pending ? 8 : 3);
  if (v.b_holds > 0 && v.a_pending) {
    allow({Op::b_release_race, rng.below(4), rng.one_of({0, 60, 200}), 0}, 6);
  }
  allow({Op::drop_reply, 0, 0, 0}, 2);
  allow({Op::drop_reply_stall, 0, 0, 0}, 1);
  if (!v.withheld) allow({Op::withhold, 0, 0, 0}, 1);
  if (v.withheld) allow({Op::deliver_withheld, 0, 0, 0}, 2);
  allow({Op::delay, 0, rng.one_of({0, 0, 40, 150}), 0}, 1);
  allow({Op::subscriber_delay, 0, rng.one_of({0, 300, 3000}), 0}, 2);
  allow({Op::blackhole, 0, rng.one_of({100, 300, 800}), 0}, 1);
  allow({Op::reset, 0, 0, 0}, 1);
  allow({Op::sleep, 0, rng.one_of({20, 150, 500}), 0}, 3);
  int total = 0;
  for (const auto& a : allowed) total += a.second;
  int pick = rng.below(total);
  for (const auto& a : allowed) {
    if (pick < a.second) return a.first;
    pick -= a.second;
  }
  return allowed.back().first;
}

}  // namespace redisync::test::lease_property
