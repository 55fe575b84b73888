// SPDX-License-Identifier: Apache-2.0
// Strict parsing of counts read back from Redis (see counts.h).
#include "sync/counters/counts.h"

#include "net/executor.h"
#include "net/server_text.h"
#include "redisync/errors.h"

namespace redisync::sync {

std::int64_t parse_count(const net::Reply& reply, const std::string& what,
                         std::exception_ptr& error) {
  if (reply.is_error()) {
    error = net::server_error(reply, what);
    return 0;
  }
  if (reply.is_nil()) return 0;
  std::int64_t value = 0;
  if (net::parse_decimal(reply.str, value)) return value;
  error = std::make_exception_ptr(
      ServerError(what + ": the key holds '" + reply.str + "', not a count", reply.str));
  return 0;
}

std::int64_t parse_count(const net::Reply& reply, const std::string& what) {
  std::exception_ptr error;
  const auto value = parse_count(reply, what, error);
  if (error) std::rethrow_exception(error);
  return value;
}

}  // namespace redisync::sync
