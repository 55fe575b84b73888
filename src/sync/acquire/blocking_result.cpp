// SPDX-License-Identifier: Apache-2.0
#include "sync/acquire/blocking_result.h"

#include <typeinfo>

#include "redisync/errors.h"
#include "redisync/multi_lock.h"
#include "redisync/permit_expirable_semaphore.h"

namespace redisync::sync {

namespace {

// A copy of `e` if its dynamic type is exactly one of Ts (never a sliced base), else null.
template <class... Ts>
std::exception_ptr copy_if_exactly(const std::exception& e) {
  std::exception_ptr copy;
  ((copy == nullptr && typeid(e) == typeid(Ts)
        ? void(copy = std::make_exception_ptr(static_cast<const Ts&>(e)))
        : void()),
   ...);
  return copy;
}

}  // namespace

std::exception_ptr copy_for_caller(std::exception_ptr error) {
  if (!error) return error;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    auto copy = copy_if_exactly<Error, ConnectionError, AuthError, TimeoutError, ServerError,
                                ProtocolError, ConfigError, InvalidArgument, NotOwnerError,
                                LockLostError, UpgradeError, ClientClosedError, MultiLockError,
                                UnknownPermitError, CancelledError>(e);
    if (copy) return copy;
  } catch (...) {
  }
  return error;
}

}  // namespace redisync::sync
