// SPDX-License-Identifier: Apache-2.0
// Lease renewal ("watchdog", docs/wire-format.md §3): one scheduler per Client renews each lock
// held in watchdog mode a third of the lease after its last renewal (or its acquire) was sent.
// One timer, armed for the earliest renewal due (RenewalTable keeps them in order): each tick
// sends what is due within lease/30, in batches of up to Config::renewal_batch_size keys per
// script call, pipelined. Holds taken at different times are renewed at different times, so a
// Client with 100,000 holds never sends them all in one burst. In a cluster every batch holds
// keys of one slot only (a script's keys must share a slot).
//
// Threading: io thread only.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <asio/steady_timer.hpp>

#include "net/cluster_slot.h"
#include "net/executor.h"
#include "redisync/metrics.h"
#include "sync/hold/renewal_table.h"

namespace redisync::sync {

using Clock = std::chrono::steady_clock;

/// The registration a planner sorts by: itself, or what a renewal ticket renews.
inline const RenewalKey& reg_of(const RenewalKey& reg) { return reg; }
inline const RenewalKey& reg_of(const RenewalTable::Ticket& ticket) { return ticket.reg(); }

/// Which renewals one watchdog tick at `now` takes (docs/wire-format.md §3.1), for a watchdog
/// lease `lease`: those due by `until` (a thirtieth of the lease ahead: holds taken close
/// together share calls instead of each tick sending a few), then, to fill the tick's last
/// call on one server, hash renewals due by `early_until` (half a renewal interval ahead: no
/// hold is renewed earlier than that). Pure, for unit tests.
struct RenewalTick {
  Clock::time_point until;
  Clock::time_point early_until;
};
inline RenewalTick renewal_tick(Clock::time_point now, Duration lease) {
  return {now + std::max(lease / 30, Duration{1}), now + renewal_interval(lease) / 2};
}

/// Splits registrations (or tickets) into script calls of at most `batch_size` keys, moving
/// them (a tick of 100,000 renewals copies nothing here). Pure, for unit tests.
template <class Reg>
std::vector<std::vector<Reg>> plan_batches(std::vector<Reg> regs, std::size_t batch_size) {
  std::vector<std::vector<Reg>> batches;
  if (batch_size == 0) batch_size = 1;
  for (std::size_t i = 0; i < regs.size(); i += batch_size) {
    const auto end = std::min(regs.size(), i + batch_size);
    batches.emplace_back(std::make_move_iterator(regs.begin() + static_cast<std::ptrdiff_t>(i)),
                         std::make_move_iterator(regs.begin() + static_cast<std::ptrdiff_t>(end)));
  }
  return batches;
}

/// The longest prefix ending in ':' that every owner field of `batch` starts with ("" when
/// they share none). A Client's owner fields all begin with its id ("<id>:<owner>"), so a
/// renewal call sends the id once and each field as what follows it (§3.2): at 100,000 holds
/// copying every whole field into the call's arguments was a heap allocation per hold per
/// renewal. Pure, for unit tests.
template <class Reg>
std::string_view shared_field_prefix(const std::vector<Reg>& batch) {
  if (batch.empty()) return {};
  std::string_view prefix = reg_of(batch.front()).field;
  for (const auto& r : batch) {
    const std::string_view field = reg_of(r).field;
    const auto differs = std::mismatch(prefix.begin(), prefix.end(), field.begin(), field.end());
    prefix = prefix.substr(0, static_cast<std::size_t>(differs.first - prefix.begin()));
  }
  const auto colon = prefix.rfind(':');
  return colon == std::string_view::npos ? std::string_view() : prefix.substr(0, colon + 1);
}

/// Splits read-lock registrations (sorted by key) into script calls of at most `batch_size`
/// distinct hashes; all fields of one hash go into the same call (§5.7). Pure, for unit tests.
template <class Reg>
std::vector<std::vector<Reg>> plan_read_batches(std::vector<Reg> regs, std::size_t batch_size) {
  std::vector<std::vector<Reg>> batches;
  if (batch_size == 0) batch_size = 1;
  std::size_t hashes = 0;
  for (std::size_t i = 0; i < regs.size(); ++i) {
    const bool new_hash = i == 0 || reg_of(regs[i]).key != reg_of(regs[i - 1]).key;
    if (new_hash && (batches.empty() || hashes == batch_size)) {
      batches.emplace_back();
      hashes = 0;
    }
    if (new_hash) ++hashes;
    batches.back().push_back(regs[i]);  // regs[i] is read by the next step: copied
  }
  return batches;
}

/// Splits registrations into groups of one cluster slot each, keeping their order within a
/// group (groups ordered by slot). Pure, for unit tests.
template <class Reg>
std::vector<std::vector<Reg>> group_by_slot(std::vector<Reg> regs) {
  std::map<std::uint16_t, std::vector<Reg>> by_slot;
  for (auto& r : regs) by_slot[net::key_slot(reg_of(r).key)].push_back(std::move(r));
  std::vector<std::vector<Reg>> groups;
  groups.reserve(by_slot.size());
  for (auto& [slot, group] : by_slot) groups.push_back(std::move(group));
  return groups;
}

class Watchdog {
 public:
  /// Called (io thread) for each registration found lost; the registration is already gone.
  using LostHandler = std::function<void(const RenewalKey&, const std::string& reason)>;

  Watchdog(net::Executor& executor, Duration lease, std::size_t batch_size, LostHandler lost);

  /// +1 registration of (key, field); starts the schedule if it is the first.
  void add(const std::string& key, const std::string& field);
  /// +1 registration of `reg` (any kind). When it is found lost, the LostHandler is told
  /// `report` instead of `reg` (e.g. the hold's name and the owner field "<client id>:<owner>"
  /// for a writer field "<client id>:<owner>:write"). `sent`: when the acquire that took the
  /// hold was sent (its local deadline counts from there).
  void add(const RenewalKey& reg, RenewalKey report, Clock::time_point sent = Clock::now());
  /// +1 registration of a hold with a fixed `lease` (never renewed): only its local deadline
  /// is kept, and the LostHandler is told `report` when it passes before the release.
  void watch(const RenewalKey& reg, RenewalKey report, Duration lease,
             Clock::time_point sent = Clock::now());
  /// The holds of `reg` left after a partial release are all fixed-lease holds: renewals of
  /// it stop, and its local deadline becomes that of a fixed `lease` sent at `sent` (the
  /// remaining hold whose lease ends last). No-op for an unknown `reg`.
  void fix(const RenewalKey& reg, Duration lease, Clock::time_point sent);
  /// An update that may shorten `reg`'s lease to `lease` is about to be sent at `sent`: its
  /// local deadline becomes the earlier of its own and that lease's (RenewalTable::cap).
  /// No-op for an unknown `reg`.
  void cap(const RenewalKey& reg, Duration lease, Clock::time_point sent);
  /// -1 registration; renewals of (key, field) stop when it reaches 0.
  void remove(const std::string& key, const std::string& field);
  void remove(const RenewalKey& reg);
  /// Drops every registration of `key` (force unlock).
  void remove_all(const std::string& key);
  /// Drops (key, field) whatever its count.
  void forget(const std::string& key, const std::string& field);
  void forget(const RenewalKey& reg);

  /// Where renewals, renewal failures and lost holds are counted (null: nowhere). Set before
  /// the first add().
  void set_metrics(Metrics* metrics) { metrics_ = metrics; }

  std::size_t size() const { return table_.size(); }
  /// The earliest local deadline of the holds watched: when the LostHandler would first be
  /// told of one if no renewal were confirmed before it. nullopt when none is watched.
  std::optional<Clock::time_point> next_deadline() const { return table_.next_deadline(); }
  /// The same for the holds of one lock key (RenewalTable::next_deadline_of).
  std::optional<Clock::time_point> next_deadline_of(const std::string& key) const {
    return table_.next_deadline_of(key);
  }
  /// Script calls sent so far (for tests and the benchmark).
  std::uint64_t calls_sent() const { return calls_sent_; }
  /// Timer ticks that sent renewals so far.
  std::uint64_t rounds() const { return rounds_; }
  void stop();

 private:
  /// One script call of a round and the registrations its reply answers, in order.
  struct Call {
    const lua::Script* script;
    std::vector<std::string> keys;
    std::vector<std::string> args;
    std::vector<RenewalTable::Ticket> regs;
  };
  /// Arms the renewal timer at the earliest renewal due, unless it is armed for that or an
  /// earlier time already.
  void schedule();
  /// Sends the renewals due now (and those renewal_tick() adds), then arms the timer again.
  void renew_due();
  /// Arms the deadline timer at the earliest local deadline, unless it is armed for that or
  /// an earlier time already.
  void arm_deadline();
  /// Reports every hold whose local deadline has passed (deadline timer).
  void expire_overdue();
  void report(const LostHold& lost);
  Call hash_call(std::vector<RenewalTable::Ticket> batch) const;
  Call read_call(std::vector<RenewalTable::Ticket> batch) const;
  void count_renewals(bool ok, const net::Reply& reply);  // metrics_ set
  void send(Call call, Clock::time_point started);
  /// Cluster: the registrations grouped by slot; one server: one group of them all.
  std::vector<std::vector<RenewalTable::Ticket>> slot_groups(
      std::vector<RenewalTable::Ticket> regs) const;
  /// Hash renewals in calls of one slot each (one server: any keys together).
  void send_by_slot(std::vector<RenewalTable::Ticket> regs, Clock::time_point started);
  /// Cluster, Redis 7: hash renewals in calls of one node each, any slots.
  void send_by_node(net::ClusterRouter& router, std::vector<RenewalTable::Ticket> regs,
                    Clock::time_point started);
  void send_node_call(std::vector<RenewalTable::Ticket> batch, Clock::time_point started);
  /// Answers each ticket of a call from its reply (or its failure).
  void answer(const std::vector<RenewalTable::Ticket>& regs, Clock::time_point started,
              const std::exception_ptr& error, const net::Reply& reply);

  net::Executor& executor_;
  Duration lease_;
  std::size_t batch_size_;
  LostHandler lost_;
  Metrics* metrics_ = nullptr;
  RenewalTable table_;
  asio::steady_timer timer_;
  asio::steady_timer deadline_timer_;
  bool deadline_armed_ = false;
  Clock::time_point armed_for_{};  // when the armed deadline timer fires
  std::uint64_t deadline_generation_ = 0;  // invalidates callbacks of re-armed waits
  bool scheduled_ = false;
  Clock::time_point scheduled_for_{};     // when the armed renewal timer fires
  std::uint64_t schedule_generation_ = 0;  // invalidates callbacks of re-armed waits
  bool stopped_ = false;
  /// Cluster: hash renewals batched per node (lock_renew_node.lua) until a server refuses the
  /// script's flag (before Redis 7); then per slot.
  bool node_batches_ = true;
  std::uint64_t calls_sent_ = 0;
  std::uint64_t rounds_ = 0;
};

}  // namespace redisync::sync
