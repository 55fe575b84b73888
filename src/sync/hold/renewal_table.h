// SPDX-License-Identifier: Apache-2.0
// The watchdog's decisions without I/O (docs/wire-format.md §3): which holds a renewal tick
// renews, what a renewal's answer means, and when a hold whose renewals were not confirmed
// must be reported lost (its local deadline). `Watchdog` (watchdog.h) sends the rounds and
// arms the timers; the unit tests drive this table with a fake clock.
//
// Cost (issue 34): every per-hold event (add, watch, fix, cap, remove, forget, a renewal's answer)
// is O(log n) in the holds of the Client; next_deadline() and next_renewal_due() are O(1);
// take_overdue() and take_due() are O(k log n) for the k holds they take. Nothing visits every
// hold. The entries are kept three times: by registration, by local deadline, and (the
// renewed ones) by when their next renewal is due.
//
// Threading: io thread only (no locking of its own).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "redisync/config.h"
#include "sync/hold/time_index.h"

namespace redisync::sync {

using Clock = std::chrono::steady_clock;

/// How a registration is renewed.
enum class RenewalKind {
  hash_field,   ///< §3.2: the owner field exists in the hash -> reset the hash's expiry
  rwlock_read,  ///< §5.7: a reader field of a read-write lock -> its markers 1..v and the hash
  /// A PermitExpirableSemaphore permit's lease (key TAG(N):timeout, field its 16 raw id
  /// bytes; reported as the semaphore's name and the hex id). Never renewed: only its local
  /// deadline is watched (Watchdog::watch).
  permit_lease,
};

/// One renewal registration: a lock hash and the owner field that holds it.
struct RenewalKey {
  std::string key;
  std::string field;
  RenewalKind kind = RenewalKind::hash_field;
  bool operator<(const RenewalKey& o) const {
    return std::tie(key, field, kind) < std::tie(o.key, o.field, o.kind);
  }
};

/// How long after a renewal (or the acquire) is sent the next one is due: a third of the
/// watchdog lease, at least 1 ms (docs/wire-format.md §3.1).
Duration renewal_interval(Duration watchdog_lease);
/// How long before its lease could end on the server a hold nobody could renew is reported
/// lost: a tenth of the lease, at least 1 ms (docs/safety.md, "the lost notice").
Duration loss_margin(Duration lease);
/// The local deadline of a hold whose last acknowledged renewal (or acquire) was sent at
/// `sent`: the server set the lease no earlier than that, so it cannot end before
/// sent + lease; the holder is told `loss_margin` sooner.
Clock::time_point local_deadline(Clock::time_point sent, Duration lease);
/// True when a hold whose last acknowledged renewal was sent at `last_renewed` must be
/// considered lost at `now`: its local deadline passed without a confirmed renewal.
bool lease_ran_out(Clock::time_point last_renewed, Clock::time_point now, Duration lease);

/// A hold found lost: what the LostHandler is told, and why.
struct LostHold {
  RenewalKey report;
  std::string reason;
};

class RenewalTable {
  struct Entry;
  using Node = std::pair<const RenewalKey, Entry>;

 public:
  /// A renewal taken by take_due() and not answered yet. It keeps its registration's node in
  /// the table until the answer comes (a release meanwhile leaves the node, emptied, until
  /// then), so the answer needs no lookup and nothing copies the key and field on the way.
  class Ticket {
   public:
    const RenewalKey& reg() const { return node_->first; }

   private:
    friend class RenewalTable;
    Ticket(Node* node, std::uint32_t epoch) : node_(node), epoch_(epoch) {}
    Node* node_;
    std::uint32_t epoch_;  ///< the registration's life it was taken in (Entry::epoch)
  };

  /// `watchdog_lease`: the lease every renewal sets (Config::lock_watchdog_timeout).
  explicit RenewalTable(Duration watchdog_lease);
  // The indexes count into steps_, and hold pointers into entries_: the table stays where it
  // was built.
  RenewalTable(const RenewalTable&) = delete;
  RenewalTable& operator=(const RenewalTable&) = delete;

  /// +1 hold of `reg` in watchdog mode (renewed); `sent`: when its acquire was sent. A
  /// fixed-lease registration re-entered this way is renewed from then on.
  void add(const RenewalKey& reg, RenewalKey report, Clock::time_point sent);
  /// +1 hold of `reg` with a fixed `lease` (never renewed, only its deadline watched).
  void watch(const RenewalKey& reg, RenewalKey report, Duration lease, Clock::time_point sent);
  /// The remaining holds of `reg` all have fixed leases, the last ending at sent + lease:
  /// renewals stop, the deadline is that lease's.
  void fix(const RenewalKey& reg, Duration lease, Clock::time_point sent);
  /// An update that may shorten `reg`'s lease to `lease` is sent at `sent` (a lease update,
  /// a MultiLock's lease set): it may run although its reply is lost, so the local deadline
  /// becomes the earlier of its own and that lease's from `sent`; only a confirmed reply may
  /// move it later (fix, watch). A renewed registration then counts renewals with the shorter
  /// lease (told early rather than late). False for an unknown `reg`.
  bool cap(const RenewalKey& reg, Duration lease, Clock::time_point sent);
  /// -1 hold; the registration goes with its last hold.
  void remove(const RenewalKey& reg);
  /// Drops `reg` whatever its count.
  void forget(const RenewalKey& reg);
  /// Drops every registration of `key`.
  void remove_all(const std::string& key);

  /// How long after a renewal (or the acquire) is sent the next one is due: a third of the
  /// watchdog lease (docs/wire-format.md §3.1).
  Duration renewal_interval() const;
  /// Takes the renewals due by `until`: hash-field registrations, and reader registrations
  /// sorted by key (all fields of one hash together). Each is due again renewal_interval()
  /// after `now`, when the caller sends it. Fixed leases are never due. Every ticket must be
  /// answered (renewal_answered or renewal_failed) exactly once.
  /// With `round_up_to` > 1, hash registrations due by `early_until` are taken too, ahead of
  /// their time, until the hash count is a multiple of it: the calls of a tick are full.
  std::pair<std::vector<Ticket>, std::vector<Ticket>> take_due(
      Clock::time_point now, Clock::time_point until, std::size_t round_up_to = 1,
      Clock::time_point early_until = Clock::time_point::min());
  /// When the earliest renewal is due; nullopt when no hold is renewed.
  std::optional<Clock::time_point> next_renewal_due() const;
  /// The answer for `reg` of a renewal sent at `sent`: renewed moves its deadline to count
  /// from `sent`; not renewed (key or field gone) means lost now. nullopt: not lost (or
  /// released meanwhile).
  std::optional<LostHold> renewal_answered(const Ticket& ticket, Clock::time_point sent,
                                           bool renewed);
  /// A renewal call for `reg` failed (error, timeout): the hold stays until its deadline;
  /// past it, it is lost now.
  std::optional<LostHold> renewal_failed(const Ticket& ticket, Clock::time_point now,
                                         const std::string& why);
  /// The same answers for a registration found by its key (the unit tests' way in).
  std::optional<LostHold> renewal_answered(const RenewalKey& reg, Clock::time_point sent,
                                           bool renewed);
  std::optional<LostHold> renewal_failed(const RenewalKey& reg, Clock::time_point now,
                                         const std::string& why);
  /// Removes and returns every hold whose local deadline has passed at `now`.
  std::vector<LostHold> take_overdue(Clock::time_point now);
  /// The earliest local deadline; nullopt when the table is empty.
  std::optional<Clock::time_point> next_deadline() const;
  /// The earliest local deadline of the holds of `key` (every field); nullopt when none is
  /// held. O(log n + the key's registrations). For checks of one lock among several holds
  /// (a composite's members), not on a hot path.
  std::optional<Clock::time_point> next_deadline_of(const std::string& key) const;

  std::size_t size() const { return live_; }
  bool empty() const { return live_ == 0; }

  /// The work done so far: key and deadline comparisons in the indexes, plus entries visited
  /// by a walk. Only the unit test that proves the cost grows as n log n reads it.
  std::uint64_t steps() const { return steps_; }

 private:
  /// Less-than that counts its calls in `*steps`.
  struct CountingKeyLess {
    std::uint64_t* steps;
    bool operator()(const RenewalKey& a, const RenewalKey& b) const {
      ++*steps;
      return a < b;
    }
  };
  /// The two schedules: nodes of entries_ by a time (map nodes stay where they are until
  /// erased, so an index reaches an entry without a lookup).
  using TimeSlots = TimeIndex<Node>;

  // Kept small: a Client may hold 100,000 of them (docs/performance.md, "many locks").
  struct Entry {
    int count = 0;                   ///< holds; 0: released, the node kept for tickets out
    std::uint32_t tickets = 0;       ///< renewals taken and not answered yet
    std::uint32_t epoch = 0;         ///< +1 each time the registration is taken anew
    bool renew = true;               ///< false: a fixed lease, only its deadline is watched
    Clock::time_point last_renewed;  ///< send time of the last acknowledged renewal/acquire
    Duration lease{0};               ///< the lease its deadline counts
    /// What the LostHandler is told when it differs from the registration (a writer field
    /// is reported as the hold's owner field); null: the registration itself.
    std::unique_ptr<RenewalKey> report;
    TimeSlots::Hook slot;  ///< its place in deadlines_ (not placed: not held)
    TimeSlots::Hook due;   ///< its place in renewals_ (not placed: not renewed)
  };
  using Entries = std::map<RenewalKey, Entry, CountingKeyLess>;

  /// Places the entry in deadlines_ again after last_renewed or lease changed.
  void reindex(Node& node);
  /// Places a renewed entry in renewals_ at `at`; takes a fixed-lease one out.
  void place_due(Node& node, Clock::time_point at);
  /// The registration `reg` while held; end() when not (or only kept for tickets out).
  Entries::iterator find_held(const RenewalKey& reg);
  /// A new hold of `reg`: its entry, taken anew (a new epoch) when it had no hold.
  Entries::iterator hold(const RenewalKey& reg);
  /// Removes the entry from every index and ends its hold; the node itself stays while
  /// tickets for it are out. Returns the next entry.
  Entries::iterator erase(Entries::iterator it);
  /// The node of an answered ticket when its registration is still held in the ticket's
  /// epoch; null otherwise (and the node freed when it was kept only for tickets).
  Node* settle(const Ticket& ticket);
  std::optional<LostHold> answered(Node& node, Clock::time_point sent, bool renewed);
  std::optional<LostHold> failed(Node& node, Clock::time_point now, const std::string& why);
  LostHold take(Entries::iterator it, std::string reason);
  static void set_report(Node& node, RenewalKey report);
  static const RenewalKey& report_of(const Node& node);

  Duration lease_;
  mutable std::uint64_t steps_ = 0;  // counted by const walks too
  Entries entries_;
  TimeSlots deadlines_{&steps_};  // by local deadline: every held entry
  TimeSlots renewals_{&steps_};   // by when the next renewal is due: the renewed entries
  std::size_t live_ = 0;          // entries with holds (entries_ also keeps some for tickets)
};

}  // namespace redisync::sync
