// SPDX-License-Identifier: Apache-2.0
// The one mapping of a Redis error reply to an exception (AuthError or ServerError).
#include <exception>
#include <string>

#include "net/executor.h"
#include "redisync/errors.h"

namespace redisync::net {

std::exception_ptr server_error(const Reply& reply, const std::string& what) {
  // A server that wants a password we did not give (or rejects the one we gave) answers
  // every command so: that is a configuration problem, not a failed operation.
  // A request too large for an unauthenticated connection gets a protocol error instead of
  // NOAUTH (Redis refuses long multibulk requests before AUTH), then the connection closes.
  if (reply.str.rfind("NOAUTH", 0) == 0 || reply.str.rfind("WRONGPASS", 0) == 0 ||
      reply.str.rfind("ERR Protocol error: unauthenticated", 0) == 0) {
    return std::make_exception_ptr(
        AuthError(what + ": server replied " + reply.str +
                  " (set the password in the URL or Config::password / Config::username)"));
  }
  return std::make_exception_ptr(ServerError(what + ": server replied " + reply.str, reply.str));
}

void throw_server_error(const Reply& reply, const std::string& what) {
  std::rethrow_exception(server_error(reply, what));
}

}  // namespace redisync::net
