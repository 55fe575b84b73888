// SPDX-License-Identifier: Apache-2.0
// The spin lock's retry schedule (docs/wire-format.md §10) and its sleep-and-retry loop.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>

#include "redisync/spin_lock.h"
#include "sync/acquire/acquire_loop.h"

namespace redisync::sync {

/// The sleeps of one waiter, in order. Pure (a seeded generator), for unit tests.
class BackoffSequence {
 public:
  BackoffSequence(const SpinBackoff& settings, std::uint64_t seed);
  /// The next sleep.
  Duration next();

 private:
  SpinBackoff settings_;
  std::mt19937_64 rng_;
  Duration previous_{0};
  long long sleeps_ = 0;  // k: sleeps handed out so far
};

/// Finding out whether an attempt whose reply was lost (timeout, dropped connection) ran:
/// the steps' settle step is tried up to `tries` times, `interval` apart, before the error is
/// reported (steps that cannot settle report it at once).
struct SpinSettle {
  int tries = 1;
  Duration interval{0};
};

/// Sleep-and-retry acquisition of `steps` (their attempt, and their settle step after an
/// attempt whose reply was lost): attempt; if not acquired and time is left, sleep the next
/// backoff (capped by the time left) on a steady_timer, then attempt again. Lives on the I/O
/// thread; owns itself until done. No pub/sub (the steps' channel is never used). A
/// cancellation (`cancel`, an async wait whose handler has a cancellation slot) ends it as its
/// deadline would, with CancelledError; an attempt in flight still decides (acquired is
/// acquired). With a Metrics `probe`, each attempt is counted.
class SpinLoop : public std::enable_shared_from_this<SpinLoop> {
 public:
  static void start(asio::io_context& io, std::optional<Clock::time_point> deadline,
                    std::shared_ptr<AcquireSteps> steps, BackoffSequence backoff,
                    AcquireLoop::Done done, SpinSettle settle = {},
                    std::shared_ptr<detail::CancelSignal> cancel = nullptr,
                    std::shared_ptr<AcquireProbe> probe = nullptr);

 private:
  SpinLoop(asio::io_context& io, std::optional<Clock::time_point> deadline,
           std::shared_ptr<AcquireSteps> steps, BackoffSequence backoff, AcquireLoop::Done done);
  void attempt();
  void on_attempt(std::exception_ptr error, const AttemptResult& result);
  void settle(std::exception_ptr error, int tries_left);
  void cancel();
  /// "Not acquired" at the end of the wait: nothing, or CancelledError once cancelled.
  std::exception_ptr gave_up() const;
  /// Ends the loop; an acquisition counts from the last attempt's send time, and `found` is
  /// what a settle step read of the hold it found.
  void finish(std::exception_ptr error, bool acquired,
              std::optional<GrantFound> found = std::nullopt);

  asio::steady_timer timer_;
  std::optional<Clock::time_point> deadline_;
  std::shared_ptr<AcquireSteps> steps_;
  BackoffSequence backoff_;
  AcquireLoop::Done done_;
  SpinSettle settle_;
  std::shared_ptr<detail::CancelSignal> cancel_;
  std::shared_ptr<AcquireProbe> probe_;  // null without a Metrics hook
  bool cancelled_ = false;
  bool finished_ = false;
  Clock::time_point attempt_sent_{};  // the last attempt's send time (for a settled one)
};

}  // namespace redisync::sync
