// SPDX-License-Identifier: Apache-2.0
// What `redisync run` tells the watcher of its command's process group (process_group.h), and
// how often it looks for a later time to tell: the watcher ends the command when that time
// passes unmoved, which covers a `run` that stopped running (SIGSTOP, ^Z, hung).
#pragma once

#include <algorithm>
#include <chrono>
#include <optional>

namespace redisync::cli {

using WatchClock = std::chrono::steady_clock;

/// The watcher's deadline for a hold whose local deadline is `lease_deadline`
/// (Client::lease_deadline()): that deadline itself, never later. The server let the hold keep
/// its lease no longer than that (docs/safety.md), whatever run's own lease setting: a freshly
/// granted hold has the releaser's short grant lease until its extension lands (issue 36).
inline std::optional<WatchClock::time_point> watcher_deadline(
    std::optional<WatchClock::time_point> lease_deadline) {
  return lease_deadline;
}

/// How long until run looks again for a later deadline to tell: a tenth of its lease (1 ms to
/// 1 s), so a renewal (every third of the lease) reaches the watcher long before the deadline
/// it moves; and, while the deadline told comes sooner (a granted hold on the releaser's grant
/// lease until its extension lands), a third of the time left to it (at least 1 ms), so the
/// extended deadline reaches the watcher before the one it replaces passes.
inline std::chrono::milliseconds deadline_check_period(
    std::chrono::milliseconds lease, std::optional<WatchClock::time_point> told,
    WatchClock::time_point now) {
  using std::chrono::milliseconds;
  auto period = std::clamp<milliseconds>(lease / 10, milliseconds(1), milliseconds(1000));
  if (told) {
    const auto left = std::chrono::floor<milliseconds>(*told - now);
    period = std::min(period, std::max(milliseconds(1), left / 3));
  }
  return period;
}

}  // namespace redisync::cli
