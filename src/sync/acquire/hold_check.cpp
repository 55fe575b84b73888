// SPDX-License-Identifier: Apache-2.0
#include "sync/acquire/hold_check.h"

namespace redisync::sync {

AttemptResult judge_hold(const HoldRead& read, long long local, const std::string& field,
                         const std::string& own_grant, bool another_waits,
                         Clock::time_point read_sent) {
  if (read.count != local + 1) return {false, -1};
  AttemptResult result{true, 0};
  if (read.pttl_ms >= 0) result.found = GrantFound{Duration{read.pttl_ms}, read_sent};
  const std::string named = field + " ";
  if (read.pttl_ms >= 0 && read.mark.size() > named.size() &&
      read.mark.compare(0, named.size(), named) == 0) {
    const bool own = !own_grant.empty() &&
                     read.mark.compare(named.size(), std::string::npos, own_grant) == 0;
    if (!own && another_waits) return {false, -1};  // granted to the other acquisition
    result.grant = GrantFound{Duration{read.pttl_ms}, read_sent};
  }
  return result;
}

}  // namespace redisync::sync
