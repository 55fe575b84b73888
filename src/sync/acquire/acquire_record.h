// SPDX-License-Identifier: Apache-2.0
// The acquire record of the semaphores' acquire scripts (docs/wire-format.md §7, §8): each
// attempt carries a record key that its script sets to "1" when it took permits. After an
// attempt whose reply was lost, the record tells whether it ran; before giving up, writing "0"
// there (when absent) cancels a late copy for good, so permits nobody knows of never stay taken.
//
// Threading: the functions it installs run on the I/O thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "sync/acquire/acquire_loop.h"

namespace redisync::detail {
class ClientCore;
}

namespace redisync::sync {

/// One attempt: run the acquire script with the request record `record` (its key) and
/// `record_ttl` (ms, as text), answering `cb`.
using RecordedAttempt = std::function<void(const std::string& record, const std::string& record_ttl,
                                           AcquireLoop::AttemptDone cb)>;

/// The steps of an acquisition on `channel` whose every attempt carries `record`: `attempt`, a
/// recheck (read the record; attempt again when it is not "1") and a settle step (claim the
/// record with "0" unless it says "1"). `record_ttl_ms`: the record's expiry, as the attempts
/// pass it. One object per acquisition, each of these kept once.
std::shared_ptr<AcquireSteps> acquire_record_steps(const std::shared_ptr<detail::ClientCore>& core,
                                                   std::string channel, RecordedAttempt attempt,
                                                   std::string record, std::string record_ttl_ms);

}  // namespace redisync::sync
