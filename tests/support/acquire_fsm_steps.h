// SPDX-License-Identifier: Apache-2.0
// Steps that drive AcquireFsm (src/sync/acquire/acquire_fsm.h) in unit tests, on a fake clock and
// scripted replies, without a server.
#pragma once

#include <gtest/gtest.h>

#include "sync/acquire/acquire_fsm.h"

namespace redisync::test {

/// A waiter that found the lock held (every attempt answers `held`) and is asleep on its
/// confirmed subscription at `now`: attempt, subscribe, attempt again, sleep.
inline sync::AcquireFsm asleep_fsm(const sync::AcquireFsm::Settings& settings,
                                   sync::Clock::time_point now, sync::AttemptResult held) {
  using Kind = sync::AcquireAction::Kind;
  sync::AcquireFsm fsm(settings);
  EXPECT_EQ(fsm.start().kind, Kind::attempt);
  EXPECT_EQ(fsm.attempt_answered(now, held, false, false).kind, Kind::subscribe);
  EXPECT_EQ(fsm.subscription_done(now, true).kind, Kind::attempt);
  EXPECT_EQ(fsm.attempt_answered(now, held, true, false).kind, Kind::sleep);
  return fsm;
}

}  // namespace redisync::test
