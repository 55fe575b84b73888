// SPDX-License-Identifier: Apache-2.0
// One member of a MultiLock / RedLock: the steps the multi-lock state machine needs from any
// lock kind (acquire, release, probe, expiry, undo of a possible hold), over the kind's own
// flows so hold counting and watchdog registration stay exactly as for a direct acquire.
//
// Threading: acquire() and release() may be called from any thread (they post to the member's
// I/O thread). The *_io functions run on the member's I/O thread only.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include "net/reply.h"
#include "redisync/config.h"
#include "redisync/lock.h"
#include "sync/hold/renewal_table.h"

namespace redisync::detail {

class CancelSignal;
class ClientCore;
struct Hold;

class MultiLockMember : public std::enable_shared_from_this<MultiLockMember> {
 public:
  using AcquireDone = std::function<void(std::exception_ptr, bool acquired)>;
  /// An acquisition's outcome; when acquired, the lineage of the owner's hold it joined
  /// (Hold::lineage), read on the member's I/O thread as the hold was counted.
  using AcquiredDone =
      std::function<void(std::exception_ptr, bool acquired, std::uint64_t lineage)>;
  using ReleaseDone = std::function<void(ReleaseOutcome, std::exception_ptr)>;
  using ReplyDone = std::function<void(std::exception_ptr, net::Reply)>;

  MultiLockMember(std::shared_ptr<ClientCore> core, std::string name)
      : core_(std::move(core)), name_(std::move(name)) {}
  virtual ~MultiLockMember() = default;

  const std::shared_ptr<ClientCore>& core() const { return core_; }
  const std::string& name() const { return name_; }
  /// "<kind> '<name>' on <server>".
  virtual std::string describe() const = 0;
  /// Which kind, for checks ("lock", "fair lock", ...).
  virtual std::string noun() const = 0;

  /// The kind's acquire flow (lease <= 0: watchdog; wait 0: one attempt). `cancel` (may be
  /// nullptr): a cancellation requested on it makes the kind's waiting loop give up with
  /// CancelledError, as for the kind's own async acquires (run_acquire).
  virtual void acquire(std::int64_t owner, Duration lease, Duration wait, AcquiredDone done,
                       std::shared_ptr<CancelSignal> cancel) const = 0;
  /// The kind's release flow (one hold, with bookkeeping).
  virtual void release(std::int64_t owner, ReleaseDone done) const = 0;

  /// Posts to the I/O thread: PTTL of the lock key, no resend (a probe of reachability and of
  /// the holder's remaining lease).
  void probe(ReplyDone done) const;
  /// Posts to the I/O thread: sets the lock key's expiry to `lease` (docs/wire-format.md §6 step 5) and
  /// makes it the lease of this owner's further re-entries and partial releases. A hold taken
  /// by a grant whose extension is not sent yet gets `lease` through that extension (it is
  /// then never overridden by it). Before it is sent, the local deadline becomes no later
  /// than `lease` from the send; a lost reply leaves it there, `done(false)`.
  void set_expiry(std::int64_t owner, Duration lease, std::function<void(bool ok)> done) const;
  /// Posts to the I/O thread: an acquisition of `owner` may have run on the server without
  /// this process counting it (no answer in time, or an answer that came too late). Drops
  /// that one hold if it is there, never one the owner had before: when the owner held
  /// nothing here a plain release step runs; otherwise only if the server's hold count is one
  /// more than ours. Decided when no acquisition of `owner` here is under way (its increment
  /// may be on the server and not counted yet), and no other undo of the hold is. Best effort
  /// (the lease bounds what it cannot undo).
  void undo_possible_hold(std::int64_t owner) const;
  /// Posts to the I/O thread: does `owner` hold it (HEXISTS of its field)?
  void is_held(std::int64_t owner, AcquireDone done) const;
  /// The lineage of `owner`'s hold of this member now (Hold::lineage): 0 when it holds none,
  /// or this process was told it was lost (its Client's lost-lock handler ran). A composite
  /// hold whose member's lineage changed lost that member, even when a later acquisition took
  /// it again. Asks no server; any thread.
  std::uint64_t lineage(std::int64_t owner) const;

 protected:
  /// Runs `start` (a member acquisition of `owner`) on the I/O thread once no undo of this
  /// hold is under way: an undo's release whose answer is outstanding may still run on the
  /// server after the acquisition, and would end the hold it took (the server's count cannot
  /// tell the two apart). Once answered, every late copy of that release finds its record
  /// and does nothing (docs/wire-format.md §1.8).
  void after_undo(std::int64_t owner, std::function<void()> start) const;
  /// The key of this owner's hold in ClientCore::holds() and its hash field (pure).
  virtual std::string hold_key() const = 0;
  virtual std::string field(std::int64_t owner) const = 0;
  /// The watchdog registration of this owner's hold (pure).
  virtual sync::RenewalKey renewal_key(std::int64_t owner) const = 0;
  /// I/O thread: the raw release step (no bookkeeping), for undo_possible_hold.
  virtual void raw_release_io(std::int64_t owner, Duration lease, const std::string& record,
                              ReplyDone done) const = 0;

 private:
  void start_after_undo(std::int64_t owner, std::function<void()> start, int waits) const;
  /// I/O thread: the raw release step for `owner`, then `then` (answered or failed).
  void run_raw_release_io(std::int64_t owner, std::function<void()> then) const;
  /// I/O thread: undo_possible_hold's decision, once no acquisition of `owner` here is under
  /// way (else deferred: defer_undo).
  void undo_when_settled(std::int64_t owner, int deferrals) const;
  void defer_undo(std::int64_t owner, int deferrals) const;
  /// I/O thread: an acquisition of `owner` is under way here (ClientCore::acquiring).
  bool acquiring(std::int64_t owner) const;
  /// I/O thread: `owner`'s hold count here (ClientCore::local_hold_count).
  long long local_count(std::int64_t owner) const;
  /// I/O thread: `hold`'s latest acquisition now has the key's expiry set to `lease` by a
  /// PEXPIRE sent at `sent` (set_expiry): its lease entry and local deadline follow.
  static void note_expiry(ClientCore& core, Hold& hold, const sync::RenewalKey& renewal,
                          Duration lease, sync::Clock::time_point sent);
  /// A lease set (PEXPIRE) of `lease` sent at `sent` ends the key, and with it every hold of
  /// the owner, then at the latest: an earlier acquisition's fixed lease that ends later is cut
  /// to it, so a partial release (keep_renewal_for_remaining) never dates the local deadline
  /// past the server's expiry from it.
  static void cap_fixed_leases(Hold& hold, Duration lease, sync::Clock::time_point sent);
  /// True when one of `hold`'s acquisitions is renewed by the watchdog.
  static bool renewed(const Hold& hold);

  std::shared_ptr<ClientCore> core_;
  std::string name_;
};

}  // namespace redisync::detail
