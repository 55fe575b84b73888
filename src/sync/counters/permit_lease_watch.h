// SPDX-License-Identifier: Apache-2.0
// The lost notice of PermitExpirableSemaphore's permits (issue 17 item 3, docs/safety.md "The
// lost notice"), and the errors of a release that finds a permit gone.
#pragma once

#include <exception>
#include <memory>
#include <optional>
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
/// The watchdog fires at a check point before that deadline (permit_check_point).
void watch_permit(ClientCore& core, const std::string& name, const std::string& raw, Duration lease,
                  sync::Clock::time_point sent);

/// An update_lease of `raw` to `lease` is about to be sent at `sent`. It may run although its
/// reply is lost, so from now on the permit's local deadline is no later than `lease` from
/// `sent`: the earlier of its own and that one, or that one for a permit not watched until now
/// (no expiry). A longer lease waits for the confirmed reply (watch_permit). No-op for
/// no_expiry, and for a permit this process was already told it lost.
void cap_permit_deadline(ClientCore& core, const std::string& name, const std::string& raw,
                         Duration lease, sync::Clock::time_point sent);

/// The watchdog's handler for a permit's check point (`hex`: its id; `reason`: the notice's
/// text should it be lost). A notice follows the server's expiry, not only our own last
/// update (issue 36 item 7: a Java client's updateLeaseTime extends a permit redisync took):
/// the server's remaining lease is read first, and the permit is reported lost at its local
/// deadline only if the server does not hold it longer (read_permit_expiry decides). I/O thread.
void permit_check_point(const std::shared_ptr<ClientCore>& core, const std::string& name,
                        const std::string& hex, const std::string& reason);

/// What the server's answer to a check point means (pure; the unit tests drive it).
struct PermitExpiryVerdict {
  enum Action {
    keep,        ///< no longer than assumed: reported lost at the local deadline, as before
    move,        ///< held longer: watched again with `lease` counted from `sent`
    no_expiry,   ///< held until released: no longer watched
    gone,        ///< not held any more: reported lost now
    unanswered,  ///< no usable answer: reported lost at the local deadline
  } action = keep;
  Duration lease{0};
  sync::Clock::time_point sent{};
};
/// `sent`, `lease`: the watch the check point was for. `asked`: when the check was sent.
/// `answer`: the script's reply (ms the server still holds it, -1 no expiry, -2 not held), or
/// nullopt for an error. A server expiry later than the one assumed by more than the loss
/// margin moves the watch to it, counted from `asked` (the server read its clock after that
/// moment: the new local deadline is never later than the server's expiry).
PermitExpiryVerdict read_permit_expiry(sync::Clock::time_point sent, Duration lease,
                                       sync::Clock::time_point asked,
                                       std::optional<long long> answer);

/// A release step answered for `raw` (released or not): its deadline is no longer watched.
/// True when the permit was not released and this process had been told it was lost.
bool settle_permit(ClientCore& core, const std::string& name, const std::string& raw,
                   bool released);

}  // namespace redisync::detail
