// SPDX-License-Identifier: Apache-2.0
#include "sync/counters/permit_lease_watch.h"

#include <asio/steady_timer.hpp>

#include "lua/scripts.h"
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
// notice"): its local deadline is the send time of the acquire or of the last update_lease +
// lease - a tenth of the lease; when that passes before a release it is reported lost. Never
// renewed. The watchdog fires at a check point before it, where the server's expiry is read
// (issue 36 item 7): a lease extended by someone else (a Java client) moves the deadline.
// I/O thread.
namespace {

sync::RenewalKey permit_registration(const std::string& name, const std::string& raw) {
  return {timeout_key(name), raw, sync::RenewalKind::permit_lease};
}

// The watchdog's lease for a watch of `lease`: it fires at the check point, early enough (a
// tenth of the lease) for the server's answer to be in by the local deadline.
Duration check_point_lease(Duration lease) { return lease - sync::loss_margin(lease); }

// Starts the watch of `raw` (lease counted from `sent`) under a fresh epoch.
void start_watch(ClientCore& core, const std::string& name, const std::string& raw,
                 Duration lease, sync::Clock::time_point sent) {
  core.watched_permits[{name, raw}] = {lease, sent, ++core.permit_watch_epochs};
  core.watchdog().watch(permit_registration(name, raw),
                        {name, sync::permit_id_to_hex(raw), sync::RenewalKind::permit_lease},
                        check_point_lease(lease), sent);
}

// The watch of `raw` ends with a notice (unless it was replaced or ended since `epoch`).
void conclude_lost(ClientCore& core, const std::string& name, const std::string& raw,
                   std::uint64_t epoch, const std::string& reason) {
  auto it = core.watched_permits.find({name, raw});
  if (it == core.watched_permits.end() || it->second.epoch != epoch) return;
  core.watched_permits.erase(it);
  core.report_lost_permit(name, sync::permit_id_to_hex(raw), reason);
}

}  // namespace

void watch_permit(ClientCore& core, const std::string& name, const std::string& raw, Duration lease,
                  sync::Clock::time_point sent) {
  const auto reg = permit_registration(name, raw);
  core.watchdog().forget(reg);
  core.watched_permits.erase({name, raw});
  core.lost_permits().erase({name, sync::permit_id_to_hex(raw)});
  if (lease == PermitExpirableSemaphore::no_expiry) return;
  start_watch(core, name, raw, lease, sent);
}

void cap_permit_deadline(ClientCore& core, const std::string& name, const std::string& raw,
                         Duration lease, sync::Clock::time_point sent) {
  if (lease == PermitExpirableSemaphore::no_expiry) return;
  const std::string hex = sync::permit_id_to_hex(raw);
  if (core.lost_permits().count({name, hex}) > 0) return;
  // Through the watch (start_watch), not the watchdog alone: the check point's own timer
  // counts from the watch's lease, which must be the earlier one from now on.
  const auto watched = core.watched_permits.find({name, raw});
  if (watched != core.watched_permits.end() &&
      sync::local_deadline(watched->second.sent, watched->second.lease) <=
          sync::local_deadline(sent, lease)) {
    return;  // its own deadline is the earlier already
  }
  // A fresh epoch: the answer of a check point begun before changes nothing.
  core.watchdog().forget(permit_registration(name, raw));
  start_watch(core, name, raw, lease, sent);
}

// A release step answered for `raw` (released or not): its deadline is no longer watched.
// True when the permit was not released and this process had been told it was lost.
bool settle_permit(ClientCore& core, const std::string& name, const std::string& raw,
                   bool released) {
  core.watchdog().forget(permit_registration(name, raw));
  core.watched_permits.erase({name, raw});
  const bool was_lost = core.lost_permits().erase({name, sync::permit_id_to_hex(raw)}) > 0;
  return was_lost && !released;
}

PermitExpiryVerdict read_permit_expiry(sync::Clock::time_point sent, Duration lease,
                                       sync::Clock::time_point asked,
                                       std::optional<long long> answer) {
  using V = PermitExpiryVerdict;
  if (!answer) return {V::unanswered};
  if (*answer == -1) return {V::no_expiry};
  if (*answer <= 0) return {V::gone};
  const Duration left{*answer};
  // The server read its clock after `asked`: it holds the permit at least until asked + left.
  if (asked + left > sent + lease + sync::loss_margin(lease)) return {V::move, left, asked};
  return {V::keep};
}

void permit_check_point(const std::shared_ptr<ClientCore>& core, const std::string& name,
                        const std::string& hex, const std::string& reason) {
  std::string raw;
  try {
    raw = sync::permit_id_from_hex(hex, name);
  } catch (...) {
    return core->report_lost_permit(name, hex, reason);  // never: the hex is our own
  }
  const auto found = core->watched_permits.find({name, raw});
  if (found == core->watched_permits.end()) return core->report_lost_permit(name, hex, reason);
  const ClientCore::WatchedPermit watch = found->second;
  const auto asked = sync::Clock::now();
  // The watchdog's text names the check point's lease; the notice names the permit's.
  const std::string ending = "its fixed lease (" + std::to_string(watch.lease.count()) +
                             " ms) is ending on the server (within " +
                             std::to_string(sync::loss_margin(watch.lease).count()) + " ms)";
  // Whichever comes first decides: the answer, or the local deadline (a silent server must
  // not delay the notice past it).
  auto decided = std::make_shared<bool>(false);
  auto deadline = std::make_shared<asio::steady_timer>(
      core->io(), sync::local_deadline(watch.sent, watch.lease));
  std::weak_ptr<ClientCore> weak = core;
  deadline->async_wait([deadline, weak, decided, name, raw, watch, ending](std::error_code ec) {
    if (ec || *decided) return;
    *decided = true;
    if (auto live = weak.lock()) conclude_lost(*live, name, raw, watch.epoch, ending);
  });
  core->executor().eval(
      lua::permit_expirable_semaphore_expiry, {timeout_key(name)}, {raw},
      [weak, decided, deadline, name, raw, watch, asked](std::exception_ptr error,
                                                         net::Reply reply) {
        if (*decided) return;
        auto live = weak.lock();
        if (!live) return;
        auto it = live->watched_permits.find({name, raw});
        if (it == live->watched_permits.end() || it->second.epoch != watch.epoch) {
          *decided = true;  // released or re-leased meanwhile: that step decides
          deadline->cancel();
          return;
        }
        std::optional<long long> answer;
        if (!error && reply.is_integer()) answer = reply.integer;
        const auto verdict = read_permit_expiry(watch.sent, watch.lease, asked, answer);
        switch (verdict.action) {
          case PermitExpiryVerdict::keep:
          case PermitExpiryVerdict::unanswered:
            return;  // the local deadline's timer reports it
          case PermitExpiryVerdict::move:
            *decided = true;
            deadline->cancel();
            start_watch(*live, name, raw, verdict.lease, verdict.sent);
            return;
          case PermitExpiryVerdict::no_expiry:
            *decided = true;
            deadline->cancel();
            live->watched_permits.erase(it);
            return;
          case PermitExpiryVerdict::gone:
            *decided = true;
            deadline->cancel();
            conclude_lost(*live, name, raw, watch.epoch,
                          "the server no longer holds it (its lease ended, or another client "
                          "shortened or released it)");
            return;
        }
      },
      net::Retry::always);  // a read: a resent copy changes nothing
}

}  // namespace redisync::detail
