// SPDX-License-Identifier: Apache-2.0
// How PermitExpirableSemaphore calls its scripts (docs/wire-format.md §8): their common KEYS
// and ARGV, the preludes in front of each, the lease argument, and the argument checks.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "lua/scripts.h"
#include "net/reply.h"
#include "redisync/config.h"

namespace redisync::detail {

class ClientCore;

/// "permit-expirable semaphore 'name' on <server>", for errors.
std::string describe_pes(const ClientCore& core, const std::string& name);

/// TAG(name):timeout, the sorted set of the permits' expiries.
std::string timeout_key(const std::string& name);

/// KEYS of every script: N, TAG(N):timeout, channel.
std::vector<std::string> pes_keys(const std::string& name);

/// ARGV of every script begins with: an unused slot (the scripts read the server's TIME
/// instead of a client clock; docs/safety.md "Clock jumps"), the publish command.
std::vector<std::string> pes_args(const ClientCore& core,
                                  std::initializer_list<std::string> more = {});

/// A lease as the scripts take it: ms from the server's now, "-1" = no expiry.
std::string lease_arg(Duration lease);

/// InvalidArgument unless the lease is > 0 and <= max_duration, or no_expiry.
void check_lease(const std::string& name, Duration lease);

/// InvalidArgument, naming `count` and the limit, unless `lowest` <= count <=
/// PermitExpirableSemaphore::kMaxCount: the one limit of the semaphore's counts (its scripts
/// take at most 15 digits). `what` says which count ("permits to set", ...).
void check_count(const std::string& name, std::int64_t count, const std::string& what,
                 std::int64_t lowest = 0);

/// Runs one script on the I/O thread and blocks for its reply (error replies thrown; a count
/// beyond the limit, COUNTLIMIT, as InvalidArgument: nothing was written). The
/// arguments are made on the I/O thread (the publish command and "now" are read there).
using MakeArgs = std::function<std::vector<std::string>(const ClientCore&)>;
net::Reply run_script(const std::shared_ptr<ClientCore>& core, const lua::Script& script,
                      std::vector<std::string> keys, const MakeArgs& make_args,
                      const std::string& what);

}  // namespace redisync::detail
