// SPDX-License-Identifier: Apache-2.0
// The lost notice of PermitExpirableSemaphore's permits (issue 17 item 3, docs/safety.md "The
// lost notice"), and the errors of a release that finds a permit gone.
#pragma once

#include <exception>
#include <string>

#include "redisync/config.h"
#include "sync/hold/renewal_table.h"

namespace redisync::detail {

class ClientCore;

/// "permit <hex> ... is not held": a release found no such permit.
std::exception_ptr unknown_permit(const std::string& hex, const ClientCore& core,
                                  const std::string& name);

/// A permit this process was told it lost (its lease ran out before the release): a release
/// finding it gone says so instead of "unknown".
std::exception_ptr lost_permit(const std::string& hex, const ClientCore& core,
                               const std::string& name);

/// Watches the local deadline of permit `raw` (none for no_expiry), counted from `sent`.
void watch_permit(ClientCore& core, const std::string& name, const std::string& raw, Duration lease,
                  sync::Clock::time_point sent);

/// An update_lease of `raw` to `lease` is about to be sent at `sent`. It may run although its
/// reply is lost, so from now on the permit's local deadline is no later than `lease` from
/// `sent`: the earlier of its own and that one, or that one for a permit not watched until now
/// (no expiry). A longer lease waits for the confirmed reply (watch_permit). No-op for
/// no_expiry, and for a permit this process was already told it lost.
void cap_permit_deadline(ClientCore& core, const std::string& name, const std::string& raw,
                         Duration lease, sync::Clock::time_point sent);

/// A release step answered for `raw` (released or not): its deadline is no longer watched.
/// True when the permit was not released and this process had been told it was lost.
bool settle_permit(ClientCore& core, const std::string& name, const std::string& raw,
                   bool released);

}  // namespace redisync::detail
