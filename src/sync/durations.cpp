// SPDX-License-Identifier: Apache-2.0
#include "sync/durations.h"

#include "redisync/errors.h"

namespace redisync::sync {

void check_lease(Duration d, const std::string& what) {
  if (d <= Duration{0} || d > max_duration) {
    throw InvalidArgument("redisync: " + what + " must be in 1.." +
                          std::to_string(max_duration.count()) + " ms (got " +
                          std::to_string(d.count()) + " ms)");
  }
}

}  // namespace redisync::sync
