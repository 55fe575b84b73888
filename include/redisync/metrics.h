// SPDX-License-Identifier: Apache-2.0
// Metrics hook: what the library reports about waits, holds and contention.
//
// Set a Metrics object on Config::metrics (a shared_ptr, so several Clients can share one
// sink); the Client reports to it for as long as it lives. With no hook set the library does
// no metrics work beyond one null check per event.
//
//   struct MyMetrics : redisync::Metrics {
//     void increment(const redisync::MetricLabels& l, redisync::Counter c,
//                    std::uint64_t n) noexcept override { ... }
//     void observe(const redisync::MetricLabels& l, redisync::Histogram h,
//                  double value) noexcept override { ... }
//   };
//   redisync::Config config = redisync::Config::from_url("redis://127.0.0.1:6379");
//   config.metrics = std::make_shared<MyMetrics>();
//
// A ready-made Prometheus sink is redisync/prometheus_metrics.h (a separate library,
// built with -DREDISYNC_PROMETHEUS=ON).
#pragma once

#include <cstdint>
#include <string_view>

#include "redisync/export.h"

namespace redisync {

/// Event counts. The label `kind` is the primitive's kind (below); `name` its Redis name.
enum class Counter {
  acquires,          ///< successful acquisitions (a reentrant re-acquire counts too; for a
                     ///< latch: a wait that saw it open)
  timeouts,          ///< acquisitions that gave up: the wait ran out (try_lock_for, 0 wait)
  wake_ups,          ///< release messages that woke a waiter of this process (rate limiter:
                     ///< a release() on the same Client that cut a wait short)
  renewals,          ///< lease renewals the watchdog confirmed (kind "watchdog")
  renewal_failures,  ///< renewal calls that failed (server unreachable, error reply)
  lost_locks,        ///< holds the watchdog found lost (key gone, or lease ran out unrenewed);
                     ///< kinds without the watchdog: a release that found the hold gone (a
                     ///< permit whose lease ran out, a multi-lock with a member lost)
  subscriptions,     ///< SUBSCRIBE/SSUBSCRIBE sent for a channel (kind "channel")
};

/// Observations. Durations are in seconds; attempts is a count.
enum class Histogram {
  acquire_wait,          ///< from the acquire call to the acquisition (successful ones)
  hold_time,             ///< from the acquisition to the release of the last hold
  handoff_latency,       ///< from the release message that woke a waiter to its acquisition
  attempts_per_acquire,  ///< acquire steps run for one successful acquisition
};

/// What an event is about.
struct REDISYNC_API MetricLabels {
  /// "lock", "fair_lock", "read_lock", "write_lock", "fenced_lock", "spin_lock",
  /// "semaphore", "permit_expirable_semaphore", "count_down_latch", "rate_limiter",
  /// "multi_lock", "red_lock" (README "Metrics" lists what each reports); "watchdog" for
  /// renewals (the watchdog renews every kind in batches), "channel" for subscriptions.
  /// Valid during the call only.
  std::string_view kind;
  /// The lock's name (a multi-lock's: "multi[a, b]"; the watchdog's: the hash key;
  /// subscriptions: the channel). Sinks that aggregate per kind ignore it (names can be
  /// unbounded). Valid during the call only.
  std::string_view name;
};

/// The hook interface. Calls come from the Client's I/O thread and from threads calling the
/// blocking API: implementations must be thread-safe, fast, must not block and must not
/// throw (they are noexcept).
class REDISYNC_API Metrics {
 public:
  virtual ~Metrics() = default;
  /// Adds `n` to a counter.
  virtual void increment(const MetricLabels& labels, Counter counter,
                         std::uint64_t n) noexcept = 0;
  /// Records one observation.
  virtual void observe(const MetricLabels& labels, Histogram histogram, double value) noexcept = 0;
};

/// "acquires", "acquire_wait_seconds", ...: the names the Prometheus exporter uses (prefixed
/// "redisync_"); handy for sinks of other kinds.
REDISYNC_API std::string_view to_string(Counter counter);
REDISYNC_API std::string_view to_string(Histogram histogram);

}  // namespace redisync
