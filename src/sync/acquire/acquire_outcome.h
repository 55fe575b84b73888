// SPDX-License-Identifier: Apache-2.0
// How an acquisition ended, as its completion receives it: whether it acquired, and what the
// new hold's local lease deadline is derived from (when the deciding attempt was sent, the
// grant that completed it, the hold a recheck found). Every waiting loop (AcquireLoop, the
// spin lock's) fills it; run_acquire reads nothing else (docs/safety.md, "the local lease
// deadline").
#pragma once

#include <optional>
#include <string>

#include "sync/acquire/acquire_fsm.h"

namespace redisync::sync {

/// A grant that completed an acquisition: the lease the releaser granted it with, and the
/// acquisition's grant id (its extension ends the grant mark naming it).
struct GrantTaken {
  Duration lease{0};
  std::string id;
};

/// Default: not acquired (`done(error, {})`). An acquired one always says when its deciding
/// attempt was sent: there is no way to report "acquired" without it.
struct AcquireOutcome {
  bool acquired = false;
  /// When acquired: the send time of the attempt that decided it (after a recheck, the
  /// uncertain attempt's, the earlier one; for a grant, no earlier than the grant was made).
  /// The hold's local lease counts from it.
  Clock::time_point sent{};
  /// When a grant completed it (grant mode, sync/acquire/grant.h): the hold starts on the
  /// releaser's grant lease until it is extended.
  std::optional<GrantTaken> grant;
  /// When a recheck or settle step found the hold (not a grant): the lock's remaining lease it
  /// read and when that read was sent. The hold may be an earlier acquisition's, and the local
  /// deadline must not lie past it.
  std::optional<GrantFound> found;
};

/// The outcome of one attempt that completes an acquisition by itself (no loop): acquired
/// when it succeeded, counting from its send (AttemptResult::sent), the hold it found if any.
inline AcquireOutcome outcome_of(const std::exception_ptr& error, const AttemptResult& result) {
  AcquireOutcome outcome;
  if (error || !result.acquired) return outcome;
  outcome.acquired = true;
  outcome.sent = result.sent;
  outcome.found = result.found;
  return outcome;
}

}  // namespace redisync::sync
