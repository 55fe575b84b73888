// SPDX-License-Identifier: Apache-2.0
// Runs a non-idempotent write step (a semaphore release, a latch count-down) so that a lost
// reply neither applies it twice nor reports a failure for a step that ran.
//
// The step's script takes a request record key as its last KEYS entry and the record's expiry
// (ms) as its last ARGV entry: it reads the record first and, when present, returns the stored
// reply and changes nothing; otherwise it runs and stores its reply there (docs/wire-format.md
// §7, §9). Every resend carries the same record, so:
//   - after a timeout or a connection dropped after sending, the step is resent after
//     retry_interval, again and again while the resend window lasts: once the connection is
//     rebuilt the resend is answered (from the record when an earlier copy ran);
//   - when the window or the resends run out and a copy may have run, the error says so.
// A step answered at its first try hands its record to the ReleaseRecordSweeper; after a lost
// reply the record is left to expire, since an earlier copy may still be on its way.
//
// Threading: I/O thread only.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lua/scripts.h"
#include "net/reply.h"

namespace redisync::detail {
class ClientCore;
}

namespace redisync::sync {

/// A fresh record key "<prefix>:TAG(name):<request id>" (same hash slot as `name`).
std::string step_record_key(const std::string& prefix, const std::string& name);

/// How long the record must live (ms): twice the resend window, which is the release record
/// TTL (§1.8) plus the time a silent connection takes to be given up (3 timeouts + connect).
long long step_record_ttl_ms(const detail::ClientCore& core);

/// Runs `script` with `keys` (record last) and `args` (record expiry last); `done(error,
/// reply)`, error replies turned into errors naming `what`.
void run_recorded_step(const std::shared_ptr<detail::ClientCore>& core, const lua::Script& script,
                       std::vector<std::string> keys, std::vector<std::string> args,
                       std::string what, std::function<void(std::exception_ptr, net::Reply)> done);

/// `error` with "<what>: ... may have run on the server ..." added when it is a timeout or a
/// connection dropped after sending (or `sent` says an earlier copy may have run); else as is.
std::exception_ptr note_may_have_run(std::exception_ptr error, const std::string& what,
                                     bool sent = false);

}  // namespace redisync::sync
