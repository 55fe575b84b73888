// SPDX-License-Identifier: Apache-2.0
#include "sync/counters/permit_lease_watch.h"

#include "redisync/errors.h"
#include "redisync/permit_expirable_semaphore.h"
#include "sync/client_core.h"
#include "sync/counters/permit_expirable_semaphore_ids.h"
#include "sync/counters/permit_expirable_semaphore_script.h"

namespace redisync::detail {

std::exception_ptr unknown_permit(const std::string& hex, const ClientCore& core,
                                  const std::string& name) {
  return std::make_exception_ptr(
      UnknownPermitError("redisync: permit " + hex + " of " + describe_pes(core, name) +
                         " is not held (never issued, already released, or its lease expired)"));
}

// A permit this process was told it lost (its lease ran out before the release): a release
// finding it gone says so instead of "unknown".
std::exception_ptr lost_permit(const std::string& hex, const ClientCore& core,
                               const std::string& name) {
  return std::make_exception_ptr(UnknownPermitError(
      "redisync: permit " + hex + " of " + describe_pes(core, name) +
      " was lost: its lease ended before this release (the lost-lock handler was told); "
      "nothing was released"));
}

// The lost notice of a permit with a lease (issue 17 item 3, docs/safety.md "The lost
// notice"): the watchdog keeps its local deadline (send time of the acquire or of the last
// update_lease + lease - a tenth of the lease) and reports it lost when that passes before a
// release. Never renewed. I/O thread.
namespace {

sync::RenewalKey permit_registration(const std::string& name, const std::string& raw) {
  return {timeout_key(name), raw, sync::RenewalKind::permit_lease};
}

}  // namespace

void watch_permit(ClientCore& core, const std::string& name, const std::string& raw, Duration lease,
                  sync::Clock::time_point sent) {
  const auto reg = permit_registration(name, raw);
  core.watchdog().forget(reg);
  core.lost_permits().erase({name, sync::permit_id_to_hex(raw)});
  if (lease == PermitExpirableSemaphore::no_expiry) return;
  core.watchdog().watch(reg, {name, sync::permit_id_to_hex(raw), sync::RenewalKind::permit_lease},
                        lease, sent);
}

void cap_permit_deadline(ClientCore& core, const std::string& name, const std::string& raw,
                         Duration lease, sync::Clock::time_point sent) {
  if (lease == PermitExpirableSemaphore::no_expiry) return;
  const std::string hex = sync::permit_id_to_hex(raw);
  if (core.lost_permits().count({name, hex}) > 0) return;
  const auto reg = permit_registration(name, raw);
  if (!core.watchdog().cap(reg, lease, sent)) {
    core.watchdog().watch(reg, {name, hex, sync::RenewalKind::permit_lease}, lease, sent);
  }
}

// A release step answered for `raw` (released or not): its deadline is no longer watched.
// True when the permit was not released and this process had been told it was lost.
bool settle_permit(ClientCore& core, const std::string& name, const std::string& raw,
                   bool released) {
  core.watchdog().forget(permit_registration(name, raw));
  const bool was_lost = core.lost_permits().erase({name, sync::permit_id_to_hex(raw)}) > 0;
  return was_lost && !released;
}

}  // namespace redisync::detail
