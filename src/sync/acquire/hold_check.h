// SPDX-License-Identifier: Apache-2.0
// The answer of a recheck or settle step of the locks that count holds in the hash N under the
// owner's field (detail::check_hold_count): after an attempt whose reply was lost, did it
// acquire? And, in grant mode, is the hold found a grant made to this owner and not taken yet?
// Such a hold has the releaser's short grant lease on the server, not the acquisition's own:
// it must complete the acquisition as a grant (issue 36), never as an ordinary hold.
// No I/O: the unit tests drive it.
#pragma once

#include <string>

#include "sync/acquire/acquire_fsm.h"

namespace redisync::sync {

/// What the step read on the server, in one atomic step (lua hold_grant_check).
struct HoldRead {
  long long count = 0;   ///< the owner's count in N (0: absent, or not a count)
  long long pttl_ms = -1;  ///< N's PTTL (-1: no expiry)
  std::string mark;      ///< the grant mark ("<field> <grant id>"), "" when absent
};

/// Acquired when the count is one more than the owner's local count `local` (only the owner
/// changes its own field). A grant when, besides, the mark names `field` and N expires: its
/// lease is what is left of N's, counted from `read_sent` (the step's send time: the server
/// read it later, so the local deadline comes no later than the server's expiry). But a mark
/// naming `field` with another grant id than `own_grant` (this acquisition's; "" for none)
/// while `another_waits` (another acquisition of the owner is listed for grants on this
/// lock: a MultiLock's walks leave them side by side) is that one's grant, not taken yet:
/// the hold is its to take, never this one's. Whenever acquired and N expires, `found` says
/// the same of the hold found, grant or not: it may be an earlier acquisition's, whose lease
/// is what N has left.
AttemptResult judge_hold(const HoldRead& read, long long local, const std::string& field,
                         const std::string& own_grant, bool another_waits,
                         Clock::time_point read_sent);

}  // namespace redisync::sync
