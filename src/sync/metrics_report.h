// SPDX-License-Identifier: Apache-2.0
// The library's side of the Metrics hook (redisync/metrics.h): what the acquire and release
// flows call. Every function starts with the null check, so with no hook set an event costs
// one branch. I/O thread.
#pragma once

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redisync/metrics.h"
#include "sync/acquire/acquire_loop.h"
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

/// The probe an acquire loop fills for `meter` (AcquireLoop::Params::probe); nullptr without
/// a hook.
inline std::shared_ptr<sync::AcquireProbe> probe_of(const std::shared_ptr<AcquireMeter>& meter) {
  return meter ? meter->probe : nullptr;
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
/// `since`: the hold's Hold::since, read before its release settled; nullopt: nothing to report.
inline void metrics_released(const ClientCore& core, std::string_view kind, const std::string& name,
                             const std::optional<sync::Clock::time_point>& since) {
  if (core.config().metrics && since) report_release(*core.config().metrics, kind, name, *since);
}

/// Reports a hold that its release found lost (a permit whose lease ran out, a multi-lock
/// whose member was lost): lost_locks under the primitive's own kind.
void report_lost(Metrics& sink, std::string_view kind, const std::string& name);

/// Permit-expirable semaphores (their permits are held by id, with a lease), with a hook set.
/// I/O thread. Remembers the permits (raw ids) an acquisition took and when their lease ends
/// (lease < 0: never), sweeping remembered permits whose lease has ended.
void metered_permits_taken(ClientCore& core, const std::string& name,
                           const std::vector<std::string>& raw_ids, Duration lease);
/// A remembered permit's lease was updated.
void metered_permit_lease(ClientCore& core, const std::string& name, const std::string& raw_id,
                          Duration lease);
/// A release of the permit found it (`held`: hold time) or not (its lease ran out: lost).
/// Permits this Client did not take, or took without a hook, report nothing.
void metered_permit_released(ClientCore& core, const std::string& name, const std::string& raw_id,
                             bool held);

}  // namespace redisync::detail
