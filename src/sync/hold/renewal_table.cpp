// SPDX-License-Identifier: Apache-2.0
#include "sync/hold/renewal_table.h"

#include <algorithm>

namespace redisync::sync {

Duration renewal_interval(Duration watchdog_lease) {
  return std::max(watchdog_lease / 3, Duration{1});
}

Duration loss_margin(Duration lease) { return std::max(lease / 10, Duration{1}); }

Clock::time_point local_deadline(Clock::time_point sent, Duration lease) {
  return sent + (lease - loss_margin(lease));
}

bool lease_ran_out(Clock::time_point last_renewed, Clock::time_point now, Duration lease) {
  return now >= local_deadline(last_renewed, lease);
}

RenewalTable::RenewalTable(Duration watchdog_lease)
    : lease_(watchdog_lease), entries_(CountingKeyLess{&steps_}) {}

Duration RenewalTable::renewal_interval() const { return sync::renewal_interval(lease_); }

namespace {

// The time an index places an entry at: `t` rounded down to the millisecond. Earlier is the
// safe side for both schedules (a renewal sent, a loss reported, at most 1 ms early), and the
// holds a burst takes within one millisecond share one place in each (TimeIndex): 100,000
// acquires each sent at its own nanosecond were 200,000 tree nodes.
Clock::time_point slot_time(Clock::time_point t) {
  return std::chrono::floor<std::chrono::milliseconds>(t);
}

}  // namespace

void RenewalTable::place_due(Node& node, Clock::time_point at) {
  // A renewal moves both of its hold's places; renewals are due, sent and answered in time
  // order, so the new place is nearly always the last time, O(1) (time_index.h).
  Entry& e = node.second;
  if (e.renew) {
    renewals_.place(e.due, node, slot_time(at));
  } else {
    renewals_.remove(e.due);
  }
}

void RenewalTable::reindex(Node& node) {
  Entry& e = node.second;
  const auto deadline = slot_time(local_deadline(e.last_renewed, e.lease));
  if (e.slot.placed() && e.slot.at() == deadline) return;
  deadlines_.place(e.slot, node, deadline);
}

void RenewalTable::set_report(Node& node, RenewalKey report) {
  if (report.key == node.first.key && report.field == node.first.field) {
    node.second.report.reset();
  } else {
    node.second.report = std::make_unique<RenewalKey>(std::move(report));
  }
}

const RenewalKey& RenewalTable::report_of(const Node& node) {
  return node.second.report ? *node.second.report : node.first;
}

RenewalTable::Entries::iterator RenewalTable::find_held(const RenewalKey& reg) {
  auto it = entries_.find(reg);
  return it != entries_.end() && it->second.count > 0 ? it : entries_.end();
}

RenewalTable::Entries::iterator RenewalTable::hold(const RenewalKey& reg) {
  const auto it = entries_.try_emplace(reg).first;
  Entry& e = it->second;
  if (e.count == 0) {
    // New, or kept only for tickets of an earlier hold: those answer nothing about this one.
    ++e.epoch;  // its places were taken out when its last hold went (erase)
    ++live_;
  }
  return it;
}

RenewalTable::Entries::iterator RenewalTable::erase(Entries::iterator it) {
  Entry& e = it->second;
  deadlines_.remove(e.slot);
  renewals_.remove(e.due);
  if (e.count > 0) --live_;
  e.count = 0;
  if (e.tickets > 0) return std::next(it);
  return entries_.erase(it);
}

RenewalTable::Node* RenewalTable::settle(const Ticket& ticket) {
  Node& node = *ticket.node_;
  Entry& e = node.second;
  --e.tickets;
  if (e.count > 0 && e.epoch == ticket.epoch_) return &node;
  if (e.count == 0 && e.tickets == 0) entries_.erase(entries_.find(node.first));
  return nullptr;
}

void RenewalTable::add(const RenewalKey& reg, RenewalKey report, Clock::time_point sent) {
  const auto it = hold(reg);
  auto& e = it->second;
  if (e.count++ == 0 || !e.renew) {
    // New, or a fixed-lease hold now re-entered in watchdog mode: renewed from now on.
    if (e.count == 1 || sent > e.last_renewed) e.last_renewed = sent;
    e.renew = true;
    place_due(*it, e.last_renewed + renewal_interval());
  }
  e.lease = lease_;
  set_report(*it, std::move(report));
  reindex(*it);
}

void RenewalTable::watch(const RenewalKey& reg, RenewalKey report, Duration lease,
                         Clock::time_point sent) {
  const auto it = hold(reg);
  auto& e = it->second;
  if (e.count++ == 0) {
    e.renew = false;
    e.lease = lease;
    e.last_renewed = sent;
    set_report(*it, std::move(report));
  } else if (!e.renew) {
    // A re-entry sets the key's expiry to its own lease (PEXPIRE) from its send time.
    e.lease = lease;
    e.last_renewed = sent;
  }
  reindex(*it);
}

void RenewalTable::fix(const RenewalKey& reg, Duration lease, Clock::time_point sent) {
  auto it = find_held(reg);
  if (it == entries_.end()) return;
  it->second.renew = false;
  it->second.lease = lease;
  it->second.last_renewed = sent;
  place_due(*it, sent);  // out of renewals_
  reindex(*it);
}

bool RenewalTable::cap(const RenewalKey& reg, Duration lease, Clock::time_point sent) {
  auto it = find_held(reg);
  if (it == entries_.end()) return false;
  Entry& e = it->second;
  if (local_deadline(sent, lease) < local_deadline(e.last_renewed, e.lease)) {
    e.lease = lease;
    e.last_renewed = sent;
    reindex(*it);
  }
  return true;
}

void RenewalTable::remove(const RenewalKey& reg) {
  auto it = find_held(reg);
  if (it == entries_.end()) return;
  if (it->second.count <= 1) {
    erase(it);
  } else {
    --it->second.count;
  }
}

void RenewalTable::forget(const RenewalKey& reg) {
  auto it = find_held(reg);
  if (it != entries_.end()) erase(it);
}

void RenewalTable::remove_all(const std::string& key) {
  auto it = entries_.lower_bound(RenewalKey{key, ""});
  while (it != entries_.end() && it->first.key == key) {
    ++steps_;
    it = it->second.count > 0 ? erase(it) : std::next(it);
  }
}

std::pair<std::vector<RenewalTable::Ticket>, std::vector<RenewalTable::Ticket>>
RenewalTable::take_due(Clock::time_point now, Clock::time_point until, std::size_t round_up_to,
                       Clock::time_point early_until) {
  // The due renewals are the head of renewals_ (their nodes, reached without a lookup). Each
  // is taken from the front and placed again at its next renewal, at the end of that time's
  // items, so each node is touched once (collecting first and placing after walked 100,000
  // scattered nodes twice). The first node placed again coming to the front means every
  // earlier one was taken: a node is taken at most once a tick.
  std::pair<std::vector<Ticket>, std::vector<Ticket>> due;
  std::size_t hashes = 0;
  const Node* first_placed = nullptr;
  while (const auto front = renewals_.first()) {
    const auto [at, node] = *front;
    if (node == first_placed) break;
    const bool reader = node->first.kind == RenewalKind::rwlock_read;
    if (at > until) {
      // Topping up: hash renewals due soon, while the last call would not be full. It stops
      // at a reader (batched per hash, plan_read_batches: left to its time), so a tick
      // visits no more than it takes.
      if (round_up_to <= 1 || hashes == 0 || at > early_until || hashes % round_up_to == 0 ||
          reader) {
        break;
      }
    }
    ++steps_;
    ++node->second.tickets;
    (reader ? due.second : due.first).push_back(Ticket(node, node->second.epoch));
    if (!reader) ++hashes;
    place_due(*node, now + renewal_interval());
    if (!first_placed) first_placed = node;
  }
  // A hash's reader fields go together into one call (Watchdog, plan_read_batches).
  std::sort(due.second.begin(), due.second.end(),
            [](const Ticket& a, const Ticket& b) { return a.reg() < b.reg(); });
  return due;
}

std::optional<Clock::time_point> RenewalTable::next_renewal_due() const {
  return renewals_.earliest();
}

LostHold RenewalTable::take(Entries::iterator it, std::string reason) {
  LostHold lost{report_of(*it), std::move(reason)};
  erase(it);
  return lost;
}

std::optional<LostHold> RenewalTable::renewal_answered(const Ticket& ticket, Clock::time_point sent,
                                                       bool renewed) {
  Node* node = settle(ticket);
  if (!node) return std::nullopt;  // released meanwhile (and maybe taken again since)
  return answered(*node, sent, renewed);
}

std::optional<LostHold> RenewalTable::renewal_failed(const Ticket& ticket, Clock::time_point now,
                                                     const std::string& why) {
  Node* node = settle(ticket);
  if (!node) return std::nullopt;
  return failed(*node, now, why);
}

std::optional<LostHold> RenewalTable::renewal_answered(const RenewalKey& reg,
                                                       Clock::time_point sent, bool renewed) {
  auto it = find_held(reg);
  if (it == entries_.end()) return std::nullopt;
  return answered(*it, sent, renewed);
}

std::optional<LostHold> RenewalTable::renewal_failed(const RenewalKey& reg, Clock::time_point now,
                                                     const std::string& why) {
  auto it = find_held(reg);
  if (it == entries_.end()) return std::nullopt;
  return failed(*it, now, why);
}

std::optional<LostHold> RenewalTable::answered(Node& node, Clock::time_point sent, bool renewed) {
  Entry& e = node.second;
  if (renewed) {
    // The server reset the lease no earlier than the renewal was sent.
    if (e.renew && sent > e.last_renewed) {
      e.last_renewed = sent;
      reindex(node);
    }
    return std::nullopt;
  }
  return take(entries_.find(node.first),
              "the lock key or its owner field is gone (expired or deleted)");
}

std::optional<LostHold> RenewalTable::failed(Node& node, Clock::time_point now,
                                             const std::string& why) {
  const Entry& e = node.second;
  // Errors keep the schedule (docs/wire-format.md §3.2) until the lease itself has run out.
  if (!lease_ran_out(e.last_renewed, now, e.lease)) return std::nullopt;
  return take(entries_.find(node.first),
              "lease ran out without a confirmed renewal" + (why.empty() ? "" : ": " + why));
}

std::vector<LostHold> RenewalTable::take_overdue(Clock::time_point now) {
  // The overdue holds are the head of the deadline index (lease_ran_out: now >= deadline).
  std::vector<Entries::iterator> overdue;
  deadlines_.walk([&](Clock::time_point at, Node& node) {
    if (at > now) return false;
    ++steps_;
    overdue.push_back(entries_.find(node.first));
    return true;
  });
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
    std::string reason = e.renew ? "no renewal was confirmed in time: the lease (" + lease +
                                       " ms) may end on the server within " + margin + " ms"
                                 : "its fixed lease (" + lease +
                                       " ms) is ending on the server (within " + margin + " ms)";
    lost.push_back(LostHold{report_of(*it), std::move(reason)});
    erase(it);
  }
  return lost;
}

std::optional<Clock::time_point> RenewalTable::next_deadline() const {
  return deadlines_.earliest();
}

std::optional<Clock::time_point> RenewalTable::next_deadline_of(const std::string& key) const {
  std::optional<Clock::time_point> earliest;
  for (auto it = entries_.lower_bound(RenewalKey{key, ""});
       it != entries_.end() && it->first.key == key; ++it) {
    const Entry& e = it->second;
    if (!e.slot.placed()) continue;  // released, kept for tickets out
    if (!earliest || e.slot.at() < *earliest) earliest = e.slot.at();
  }
  return earliest;
}

}  // namespace redisync::sync
