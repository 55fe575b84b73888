// SPDX-License-Identifier: Apache-2.0
// What a release found: the outcome every lock kind's release() reports.
#pragma once

#include <string>

#include "redisync/export.h"

namespace redisync {

/// What release() found.
enum class ReleaseOutcome {
  released,     ///< this was the last hold; the lock is free and one waiter was woken
  still_held,   ///< a reentrant hold was dropped; the owner still holds it (count > 0)
  not_held,     ///< the caller did not hold it (unlock() would raise NotOwnerError)
  lost,         ///< the caller held it but it expired or was removed (LockLostError)
  failed,       ///< the server could not be reached; see ReleaseResult::error
};

struct REDISYNC_API ReleaseResult {
  ReleaseOutcome outcome;
  std::string error;  ///< for `failed`: what went wrong
  explicit operator bool() const {
    return outcome == ReleaseOutcome::released || outcome == ReleaseOutcome::still_held;
  }
};

}  // namespace redisync
