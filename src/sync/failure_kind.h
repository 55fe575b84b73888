// SPDX-License-Identifier: Apache-2.0
// How a failed request failed, read once from its exception. The acquire loop (retry or not,
// may the attempt have run) and the multi-lock (a member's outcome, undo a possible hold or
// not) each decide from this one reading instead of catching the exception types themselves.
#pragma once

#include <exception>
#include <string>

namespace redisync::sync {

enum class FailureKind {
  server_error,         ///< Redis answered with an error reply (ServerError)
  auth_failed,          ///< the server refused our credentials (AuthError): nothing ran
  dropped_before_send,  ///< the connection dropped before the request was written
  dropped_after_send,   ///< the connection dropped after it was written: it may have run
  timed_out,            ///< no answer in time (TimeoutError): it may have run
  client_closed,        ///< the Client shut down while the request was pending
  other,                ///< anything else (a protocol error, a bad reply, not a redisync error)
};

/// The kind of a (non-null) failure.
FailureKind failure_kind(std::exception_ptr error);

/// True for an error after which the request may have run on the server (a timeout, or a
/// connection dropped after sending). False for a null error.
bool may_have_run(std::exception_ptr error);

/// The failure's what(), or "unknown error" for an exception that is not a std::exception.
std::string failure_text(std::exception_ptr error);

}  // namespace redisync::sync
