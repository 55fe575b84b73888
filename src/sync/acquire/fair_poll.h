// SPDX-License-Identifier: Apache-2.0
// The fair lock's re-poll bound (docs/wire-format.md §4.8). Pure, for unit tests.
#pragma once

namespace redisync::sync {

/// How long a queued fair-lock waiter sleeps before re-polling (unless its own channel wakes
/// it first) after the acquire step answered `reply` (§4.3), with wait allowance
/// `allowance_ms`. Never longer than 1000 ms (a new head is not always told that it became the
/// head) nor than a third of the allowance (each poll refreshes the waiter's deadline, which
/// runs out one allowance later). A positive answer is the step's own estimate. 0 (the lock is free
/// but another waiter is at the head, or the holder set no expiry) carries no estimate: instead of
/// re-polling at once (a busy loop until a dead head's deadline), the waiter backs off 10, 20,
/// 40 ... up to that bound as `idle_polls` (consecutive answers <= 0 before this one) grows.
long long fair_poll_ms(long long reply, int idle_polls, long long allowance_ms);

}  // namespace redisync::sync
