// SPDX-License-Identifier: Apache-2.0
#include "redisync/metrics.h"

namespace redisync {

std::string_view to_string(Counter counter) {
  switch (counter) {
    case Counter::acquires: return "acquires";
    case Counter::timeouts: return "timeouts";
    case Counter::wake_ups: return "wake_ups";
    case Counter::renewals: return "renewals";
    case Counter::renewal_failures: return "renewal_failures";
    case Counter::lost_locks: return "lost_locks";
    case Counter::subscriptions: return "subscriptions";
  }
  return "unknown";
}

std::string_view to_string(Histogram histogram) {
  switch (histogram) {
    case Histogram::acquire_wait: return "acquire_wait_seconds";
    case Histogram::hold_time: return "hold_time_seconds";
    case Histogram::handoff_latency: return "handoff_latency_seconds";
    case Histogram::attempts_per_acquire: return "attempts_per_acquire";
  }
  return "unknown";
}

}  // namespace redisync
