// SPDX-License-Identifier: Apache-2.0
#include "sync/multi/multi_lock_outcome.h"

#include "redisync/errors.h"
#include "sync/failure_kind.h"

namespace redisync::detail {

using sync::FailureKind;

bool is_cancelled(std::exception_ptr error) {
  if (!error) return false;
  try {
    std::rethrow_exception(error);
  } catch (const CancelledError&) {
    return true;
  } catch (...) {
    return false;
  }
}

// May an acquire that failed with `error` have taken the member anyway? Unlike the acquire
// loop, which retries only failures it knows to be passing, the answer here only decides
// whether to undo a possible hold, which costs little: so only a failure that proves nothing
// ran (an error reply, refused credentials, a connection that dropped before sending) is a no.
bool may_have_taken(std::exception_ptr error) {
  switch (sync::failure_kind(error)) {
    case FailureKind::server_error:
    case FailureKind::auth_failed:
    case FailureKind::dropped_before_send:
      return false;
    default:
      return true;
  }
}

MemberOutcome outcome_of(std::exception_ptr error, std::string& detail) {
  detail = sync::failure_text(error);
  switch (sync::failure_kind(error)) {
    case FailureKind::timed_out:
      return MemberOutcome::timed_out;
    case FailureKind::auth_failed:
      return MemberOutcome::credentials_refused;
    case FailureKind::dropped_before_send:
    case FailureKind::dropped_after_send:
    case FailureKind::client_closed:
      return MemberOutcome::unreachable;
    default:
      return MemberOutcome::error;
  }
}

std::string held_detail(long long ttl) {
  if (ttl >= 0) return "remaining lease " + std::to_string(ttl) + " ms when tried";
  if (ttl == -1) return "held without expiry";
  return "not acquired; the lock was free when checked (taken and released meanwhile)";
}

}  // namespace redisync::detail
