// SPDX-License-Identifier: Apache-2.0
// The non-reentrant lock kinds (docs/wire-format.md §12): what they add to the kinds they vary.
#pragma once

#include <string>

#include "sync/locks/lock_kind.h"

namespace redisync::detail {

/// The ServerError of a NON_REENTRANT_REACQUIRE reply (non_reentrant_guard.lua), as a
/// ReentryError naming `what` (the lock); any other error unchanged.
std::exception_ptr as_reentry_error(std::exception_ptr error, const std::string& what);

/// Grant mode: a ReentryError naming `what` when `owner` already waits for `name` in another
/// acquisition of this Client (two tasks sharing an owner id), else nullptr. In wake mode
/// always nullptr. (Why: NonReentrantKind in non_reentrant_lock.cpp.)
std::exception_ptr waiting_owner_error(const ClientCore& core, const std::string& name,
                                       std::int64_t owner, const std::string& what);

/// The fair lock kind of fair_lock.cpp with the guard in front of its acquire step.
KindPtr non_reentrant_fair_kind();

}  // namespace redisync::detail
