// SPDX-License-Identifier: Apache-2.0
#include "sync/failure_kind.h"

#include "redisync/errors.h"

namespace redisync::sync {

FailureKind failure_kind(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const AuthError&) {  // before ConnectionError, its base
    return FailureKind::auth_failed;
  } catch (const ConnectionError& e) {
    return e.maybe_sent() ? FailureKind::dropped_after_send : FailureKind::dropped_before_send;
  } catch (const TimeoutError&) {
    return FailureKind::timed_out;
  } catch (const ServerError&) {
    return FailureKind::server_error;
  } catch (const ClientClosedError&) {
    return FailureKind::client_closed;
  } catch (...) {
    return FailureKind::other;
  }
}

bool may_have_run(std::exception_ptr error) {
  if (!error) return false;
  const FailureKind kind = failure_kind(error);
  return kind == FailureKind::dropped_after_send || kind == FailureKind::timed_out;
}

std::string failure_text(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace redisync::sync
