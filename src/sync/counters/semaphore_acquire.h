// SPDX-License-Identifier: Apache-2.0
// The waiting part of a semaphore acquire, shared by Semaphore and PermitExpirableSemaphore
// (docs/wire-format.md §7, §8, §13): a turn at the process-local gate, then an AcquireLoop on
// the semaphore's channel whose every attempt carries one request record.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "sync/acquire/acquire_loop.h"
#include "sync/acquire/acquire_record.h"

namespace redisync::detail {
class ClientCore;
}

namespace redisync::sync {

struct SemaphoreAcquire {
  std::string name;           ///< the semaphore's key
  std::string gate_key;       ///< the local gate's key ("semaphore:" + name, ...)
  std::string record_prefix;  ///< the request record's key prefix ("redisync_semaphore_request")
  std::int64_t permits = 1;   ///< what the gate admits
  std::optional<Clock::time_point> deadline;
  std::shared_ptr<AcquireProbe> probe;  ///< nullptr without a Metrics hook
  RecordedAttempt attempt;
  /// When set: gets the send time of the attempt that decided (AcquireOutcome::sent), once
  /// acquired.
  std::shared_ptr<std::optional<Clock::time_point>> sent;
  /// Optional (an async acquisition whose handler has a cancellation slot): gives the
  /// acquisition up with CancelledError, at the gate or in its loop (AcquireLoop::Params).
  std::shared_ptr<detail::CancelSignal> cancel;
};

/// Runs `acquire`; `done(error, acquired)` is called once on the I/O thread. The request record
/// makes the acquisition idempotent (issues 22, 23): a resent or late attempt takes nothing
/// twice, and after a lost reply the record tells whether one ran (and settles it). Call on
/// the I/O thread.
void start_semaphore_acquire_loop(const std::shared_ptr<detail::ClientCore>& core,
                                  SemaphoreAcquire acquire,
                                  std::function<void(std::exception_ptr, bool acquired)> done);

}  // namespace redisync::sync
