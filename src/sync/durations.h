// SPDX-License-Identifier: Apache-2.0
// The one check every lease and TTL passes before anything is written (issue 17 item 1): a
// duration Redis cannot store must never reach a script, where a PEXPIRE refused after the
// lock hash was written would leave a lock without expiry. Limits: redisync::max_duration.
#pragma once

#include <string>

#include "redisync/config.h"

namespace redisync::sync {

/// Throws InvalidArgument unless 0 < d <= max_duration:
/// "redisync: <what> must be in 1..1000000000000 ms (got N ms)".
void check_lease(Duration d, const std::string& what);

}  // namespace redisync::sync
