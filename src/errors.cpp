// SPDX-License-Identifier: Apache-2.0
#include "redisync/errors.h"

#include <string>

namespace redisync {
namespace {

class Category final : public std::error_category {
 public:
  const char* name() const noexcept override { return "redisync"; }

  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::connection_failed:
        return "connection to the Redis server failed or was lost";
      case errc::auth_failed:
        return "authentication refused by the Redis server";
      case errc::timeout:
        return "timed out waiting for a reply from the Redis server";
      case errc::server_error:
        return "the Redis server replied with an error";
      case errc::protocol_error:
        return "invalid RESP data received from the Redis server";
      case errc::invalid_config:
        return "invalid configuration";
      case errc::invalid_argument:
        return "invalid argument";
      case errc::not_owner:
        return "the caller does not hold the lock";
      case errc::lock_lost:
        return "the lock expired or was removed while held";
      case errc::upgrade_would_deadlock:
        return "a read lock holder cannot acquire the write lock (would deadlock)";
      case errc::client_closed:
        return "the client was closed";
      case errc::unknown_permit:
        return "unknown or expired permit id";
      case errc::multi_lock_failed:
        return "too many members of a multi-lock failed";
      case errc::not_configured:
        return "the rate limiter has no rate set";
      case errc::reentry_refused:
        return "the holder of a non-reentrant lock asked for it again";
      case errc::cancelled:
        return "the wait was cancelled";
    }
    // Not a switch default, so -Wswitch flags an errc added without a message.
    return "unknown redisync error " + std::to_string(value);
  }
};

}  // namespace

const std::error_category& error_category() noexcept {
  // Function-local so it is usable from other translation units' static initializers.
  static const Category category;
  return category;
}

// Out of line on purpose: the vtable and type info of Error live in this one translation unit,
// and what() and the destructor appear as frames in ThreadSanitizer reports, where
// tests/tsan.supp names them (exception objects freed through std::exception_ptr on another
// thread; see there).
Error::~Error() = default;

const char* Error::what() const noexcept { return message_.c_str(); }

}  // namespace redisync
