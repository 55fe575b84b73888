// SPDX-License-Identifier: Apache-2.0
#include "sync/hold/renewal_table.h"

#include <algorithm>

namespace redisync::sync {

Duration loss_margin(Duration lease) { return std::max(lease / 10, Duration{1}); }

Clock::time_point local_deadline(Clock::time_point sent, Duration lease) {
  return sent + (lease - loss_margin(lease));
}

bool lease_ran_out(Clock::time_point last_renewed, Clock::time_point now, Duration lease) {
  return now >= local_deadline(last_renewed, lease);
}

RenewalTable::RenewalTable(Duration watchdog_lease)
    : lease_(watchdog_lease),
      entries_(CountingKeyLess{&steps_}),
      deadlines_(CountingDeadlineLess{&steps_}),
      renewals_(CountingDeadlineLess{&steps_}) {}

Duration RenewalTable::renewal_interval() const { return std::max(lease_ / 3, Duration{1}); }

void RenewalTable::place_due(Entries::iterator it, Clock::time_point at) {
  Entry& e = it->second;
  if (e.due != renewals_.end()) renewals_.erase(e.due);
  e.due = e.renew ? renewals_.insert({at, &it->first}).first : renewals_.end();
}

void RenewalTable::reindex(Entries::iterator it) {
  Entry& e = it->second;
  const DeadlineSlot slot{local_deadline(e.last_renewed, e.lease), &it->first};
  if (e.slot != deadlines_.end()) {
    if (*e.slot == slot) return;
    deadlines_.erase(e.slot);
  }
  e.slot = deadlines_.insert(slot).first;
}

RenewalTable::Entries::iterator RenewalTable::erase(Entries::iterator it) {
  if (it->second.slot != deadlines_.end()) deadlines_.erase(it->second.slot);
  if (it->second.due != renewals_.end()) renewals_.erase(it->second.due);
  return entries_.erase(it);
}

void RenewalTable::add(const RenewalKey& reg, RenewalKey report, Clock::time_point sent) {
  const auto it = entries_.try_emplace(reg).first;
  auto& e = it->second;
  if (e.count == 0) {
    e.slot = deadlines_.end();
    e.due = renewals_.end();
  }
  if (e.count++ == 0 || !e.renew) {
    // New, or a fixed-lease hold now re-entered in watchdog mode: renewed from now on.
    if (e.count == 1 || sent > e.last_renewed) e.last_renewed = sent;
    e.renew = true;
    place_due(it, e.last_renewed + renewal_interval());
  }
  e.lease = lease_;
  e.report = std::move(report);
  reindex(it);
}

void RenewalTable::watch(const RenewalKey& reg, RenewalKey report, Duration lease,
                         Clock::time_point sent) {
  const auto it = entries_.try_emplace(reg).first;
  auto& e = it->second;
  if (e.count++ == 0) {
    e.slot = deadlines_.end();
    e.due = renewals_.end();
    e.renew = false;
    e.lease = lease;
    e.last_renewed = sent;
    e.report = std::move(report);
  } else if (!e.renew) {
    // A re-entry sets the key's expiry to its own lease (PEXPIRE) from its send time.
    e.lease = lease;
    e.last_renewed = sent;
  }
  reindex(it);
}

void RenewalTable::fix(const RenewalKey& reg, Duration lease, Clock::time_point sent) {
  auto it = entries_.find(reg);
  if (it == entries_.end()) return;
  it->second.renew = false;
  it->second.lease = lease;
  it->second.last_renewed = sent;
  place_due(it, sent);  // out of renewals_
  reindex(it);
}

bool RenewalTable::cap(const RenewalKey& reg, Duration lease, Clock::time_point sent) {
  auto it = entries_.find(reg);
  if (it == entries_.end()) return false;
  Entry& e = it->second;
  if (local_deadline(sent, lease) < local_deadline(e.last_renewed, e.lease)) {
    e.lease = lease;
    e.last_renewed = sent;
    reindex(it);
  }
  return true;
}

void RenewalTable::remove(const RenewalKey& reg) {
  auto it = entries_.find(reg);
  if (it == entries_.end()) return;
  if (--it->second.count <= 0) erase(it);
}

void RenewalTable::forget(const RenewalKey& reg) {
  auto it = entries_.find(reg);
  if (it != entries_.end()) erase(it);
}

void RenewalTable::remove_all(const std::string& key) {
  auto it = entries_.lower_bound(RenewalKey{key, ""});
  while (it != entries_.end() && it->first.key == key) {
    ++steps_;
    it = erase(it);
  }
}

std::pair<std::vector<RenewalKey>, std::vector<RenewalKey>> RenewalTable::take_due(
    Clock::time_point now, Clock::time_point until) {
  // The due renewals are the head of renewals_.
  std::vector<Entries::iterator> taken;
  for (auto slot = renewals_.begin(); slot != renewals_.end() && slot->first <= until; ++slot) {
    ++steps_;
    taken.push_back(entries_.find(*slot->second));
  }
  std::pair<std::vector<RenewalKey>, std::vector<RenewalKey>> due;
  for (auto it : taken) {
    (it->first.kind == RenewalKind::rwlock_read ? due.second : due.first).push_back(it->first);
    place_due(it, now + renewal_interval());
  }
  // A hash's reader fields go together into one call (Watchdog, plan_read_batches).
  std::sort(due.second.begin(), due.second.end());
  return due;
}

std::optional<Clock::time_point> RenewalTable::next_renewal_due() const {
  if (renewals_.empty()) return std::nullopt;
  return renewals_.begin()->first;
}

LostHold RenewalTable::take(Entries::iterator it, std::string reason) {
  LostHold lost{it->second.report, std::move(reason)};
  erase(it);
  return lost;
}

std::optional<LostHold> RenewalTable::renewal_answered(const RenewalKey& reg,
                                                       Clock::time_point sent, bool renewed) {
  auto it = entries_.find(reg);
  if (it == entries_.end()) return std::nullopt;  // released meanwhile
  if (renewed) {
    // The server reset the lease no earlier than the renewal was sent.
    if (it->second.renew && sent > it->second.last_renewed) {
      it->second.last_renewed = sent;
      reindex(it);
    }
    return std::nullopt;
  }
  return take(it, "the lock key or its owner field is gone (expired or deleted)");
}

std::optional<LostHold> RenewalTable::renewal_failed(const RenewalKey& reg,
                                                     Clock::time_point now,
                                                     const std::string& why) {
  auto it = entries_.find(reg);
  if (it == entries_.end()) return std::nullopt;
  // Errors keep the schedule (docs/wire-format.md §3.2) until the lease itself has run out.
  if (!lease_ran_out(it->second.last_renewed, now, it->second.lease)) return std::nullopt;
  return take(it, "lease ran out without a confirmed renewal" + (why.empty() ? "" : ": " + why));
}

std::vector<LostHold> RenewalTable::take_overdue(Clock::time_point now) {
  // The overdue holds are the head of the deadline index (lease_ran_out: now >= deadline).
  std::vector<Entries::iterator> overdue;
  for (auto slot = deadlines_.begin(); slot != deadlines_.end() && slot->first <= now; ++slot) {
    ++steps_;
    overdue.push_back(entries_.find(*slot->second));
  }
  // Reported in registration order, as a walk of entries_ would.
  std::sort(overdue.begin(), overdue.end(), [this](Entries::iterator a, Entries::iterator b) {
    return entries_.key_comp()(a->first, b->first);
  });
  std::vector<LostHold> lost;
  lost.reserve(overdue.size());
  for (auto it : overdue) {
    const Entry& e = it->second;
    const auto lease = std::to_string(e.lease.count());
    const auto margin = std::to_string(loss_margin(e.lease).count());
    std::string reason =
        e.renew ? "no renewal was confirmed in time: the lease (" + lease +
                      " ms) may end on the server within " + margin + " ms"
                : "its fixed lease (" + lease + " ms) is ending on the server (within " +
                      margin + " ms)";
    lost.push_back(LostHold{e.report, std::move(reason)});
    erase(it);
  }
  return lost;
}

std::optional<Clock::time_point> RenewalTable::next_deadline() const {
  if (deadlines_.empty()) return std::nullopt;
  return deadlines_.begin()->first;
}

}  // namespace redisync::sync
