// The library's side of the Metrics hook (redisync/metrics.h): what the acquire and release
// flows call. Every function starts with the null check, so with no hook set an event costs
// one branch. I/O thread.
#pragma once

#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <string_view>

#include "redisync/metrics.h"
#include "sync/acquire_loop.h"
#include "sync/client_core.h"

namespace redisync::detail {

/// One acquisition being measured: created at the acquire call when a hook is set.
struct AcquireMeter {
  Metrics* sink;
  std::string kind;  ///< "lock", "fair_lock", ...
  std::string name;
  sync::Clock::time_point started;
  std::shared_ptr<sync::AcquireProbe> probe;  ///< what the waiting loop counted
};

/// "fair lock" -> "fair_lock".
std::string metrics_kind(std::string_view noun);

/// A meter for an acquisition starting now, or nullptr when no hook is set.
inline std::shared_ptr<AcquireMeter> start_acquire_meter(const ClientCore& core,
                                                         std::string_view kind,
                                                         const std::string& name) {
  if (!core.config().metrics) return nullptr;
  return std::make_shared<AcquireMeter>(AcquireMeter{core.config().metrics.get(),
                                                     metrics_kind(kind), name,
                                                     sync::Clock::now(),
                                                     std::make_shared<sync::AcquireProbe>()});
}

/// Reports the end of an acquisition: acquires, wait, attempts, wake-ups, handoff latency, or
/// a timeout. `held`: the hold just counted (its first hold starts the hold time).
void report_acquire(const AcquireMeter& meter, std::exception_ptr error, bool acquired,
                    Hold* held);
inline void metrics_acquired(const std::shared_ptr<AcquireMeter>& meter, std::exception_ptr error,
                             bool acquired, Hold* held) {
  if (meter) report_acquire(*meter, std::move(error), acquired, held);
}

/// Reports the release of the last hold that started at `since` (hold time).
void report_release(Metrics& sink, std::string_view kind, const std::string& name,
                    sync::Clock::time_point since);
inline void metrics_released(const ClientCore& core, std::string_view kind, const std::string& name,
                             const Hold* hold) {
  if (core.config().metrics && hold) report_release(*core.config().metrics, kind, name, hold->since);
}

}  // namespace redisync::detail
