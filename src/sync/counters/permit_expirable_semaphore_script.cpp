// SPDX-License-Identifier: Apache-2.0
#include "sync/counters/permit_expirable_semaphore_script.h"

#include "redisync/errors.h"
#include "redisync/permit_expirable_semaphore.h"
#include "redisync/semaphore.h"
#include "sync/client_core.h"
#include "sync/counters/counts.h"
#include "sync/identity.h"
#include "sync/counters/semaphore_gate.h"

namespace redisync::detail {

std::string describe_pes(const ClientCore& core, const std::string& name) {
  return "permit-expirable semaphore '" + name + "' on " + core.server();
}

std::string timeout_key(const std::string& name) { return sync::hash_tag(name) + ":timeout"; }

// KEYS of every script: N, TAG(N):timeout, channel.
std::vector<std::string> pes_keys(const std::string& name) {
  return {name, timeout_key(name), sync::semaphore_channel(name)};
}

// ARGV of every script begins with: an unused slot (the scripts read the server's TIME
// instead of a client clock; docs/safety.md "Clock jumps"), the publish command.
constexpr const char* kUnusedNow = "0";
std::vector<std::string> pes_args(const ClientCore& core, std::initializer_list<std::string> more) {
  std::vector<std::string> args{kUnusedNow, core.publish_command()};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// A lease as the scripts take it: ms from the server's now, "-1" = no expiry.
std::string lease_arg(Duration lease) {
  if (lease == PermitExpirableSemaphore::no_expiry) return "-1";
  return std::to_string(lease.count());
}

void check_lease(const std::string& name, Duration lease) {
  if (lease <= Duration{0}) {
    throw InvalidArgument("redisync: lease for permit-expirable semaphore '" + name +
                          "' must be > 0 or no_expiry (got " + std::to_string(lease.count()) +
                          " ms)");
  }
  // Scores are epoch ms below the no-expiry constant (about year 31197); leases stay within
  // max_duration like every other lease (sync::check_lease).
  if (lease != PermitExpirableSemaphore::no_expiry && lease > max_duration) {
    throw InvalidArgument("redisync: lease for permit-expirable semaphore '" + name +
                          "' must be <= " + std::to_string(max_duration.count()) + " ms (got " +
                          std::to_string(lease.count()) +
                          " ms); use PermitExpirableSemaphore::no_expiry for no expiry");
  }
}

void check_count(const std::string& name, std::int64_t count, const std::string& what,
                 std::int64_t lowest) {
  constexpr auto limit = PermitExpirableSemaphore::kMaxCount;
  if (count < lowest || count > limit) {
    throw InvalidArgument("redisync: " + what + " permit-expirable semaphore '" + name +
                          "' must be in [" + std::to_string(lowest) + ", " +
                          std::to_string(limit) + "] (got " + std::to_string(count) +
                          "; its scripts keep a count of at most 15 digits); nothing was written");
  }
}

// Runs one script on the I/O thread and blocks for its reply (error replies thrown). The
// arguments are made on the I/O thread (the publish command and "now" are read there).
net::Reply run_script(const std::shared_ptr<ClientCore>& core, const lua::Script& script,
                      std::vector<std::string> keys, const MakeArgs& make_args,
                      const std::string& what) {
  return core->call<net::Reply>([&](auto done) {
    core->executor().eval(script, std::move(keys), make_args(*core),
                          [done, what](std::exception_ptr error, net::Reply reply) {
                            if (!error && reply.is_error()) {
                              error = reply.str.rfind("COUNTLIMIT ", 0) == 0
                                          ? std::make_exception_ptr(InvalidArgument(
                                                "redisync: " + what + ": " + reply.str.substr(11)))
                                          : net::server_error(reply, what);
                            }
                            done(error, std::move(reply));
                          });
  });
}

}  // namespace redisync::detail
