// SPDX-License-Identifier: Apache-2.0
// How one member's failed try reads: in the attempt's report (its outcome and detail), and
// for the attempt itself (must a possible hold be undone?).
#pragma once

#include <exception>
#include <string>

#include "redisync/multi_lock.h"

namespace redisync::detail {

/// Is `error` a CancelledError (a member wait that gave up when cancelled, leaving nothing)?
bool is_cancelled(std::exception_ptr error);

/// May an acquire that failed with `error` have taken the member anyway?
bool may_have_taken(std::exception_ptr error);

/// The report's outcome for a member whose try failed with `error`; `detail` gets its text.
MemberOutcome outcome_of(std::exception_ptr error, std::string& detail);

/// The report's detail for a member held by another, from the TTL probed when it was tried.
std::string held_detail(long long ttl);

}  // namespace redisync::detail
