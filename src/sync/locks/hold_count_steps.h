// SPDX-License-Identifier: Apache-2.0
// What every lock kind's acquisition record on an owner-count hash shares (Lock, FencedLock,
// the non-reentrant locks, FairLock, ReadWriteLock's two sides): the record is the waiting
// loop's steps (AcquireSteps) and the attempt's request (AttemptRequest) at once, keeps the
// Client, kind, name, owner and lease once, and builds each request when it is sent. The steps
// derived from the owner's hold count are here, once:
// - recheck: after an attempt that may have run on the server (a timeout, a dropped
//   connection), the owner's count tells whether it did (only this owner changes its own
//   field); if not, it attempts again;
// - settle: the same check alone, before the loop gives up after such an attempt;
// - undo: the kind's own release of the one hold an unacknowledged attempt added.
// A kind's record says what it sends (script, keys, args, parse) and its channel.
//
// Threading: the steps run on the I/O thread; keys() and args() touch no shared state.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "sync/acquire/acquire_steps.h"
#include "sync/locks/lock_kind.h"

namespace redisync::detail {

class HoldCountSteps : public sync::AcquireSteps,
                       public AttemptRequest,
                       public std::enable_shared_from_this<HoldCountSteps> {
 public:
  HoldCountSteps(std::shared_ptr<ClientCore> core, KindPtr kind, std::string name,
                 std::int64_t owner, Duration lease, bool refuse_reentry = false)
      : core_(std::move(core)),
        kind_(std::move(kind)),
        name_(std::move(name)),
        owner_(owner),
        lease_(lease),
        refuse_reentry_(refuse_reentry) {}

  // --- AcquireSteps ---
  /// One attempt (send_attempt); a non-reentrant kind's NON_REENTRANT_REACQUIRE refusal is
  /// reported as a ReentryError.
  void attempt(Done done) override;
  bool can_recheck() const override { return true; }
  bool can_settle() const override { return true; }
  /// The owner's count says whether the attempt ran; if not, attempt(). Read first, never
  /// resent blindly: a non-reentrant kind's second run would refuse our own first hold.
  void recheck(Done done) override;
  void settle(Done done) override;

  // --- AttemptRequest ---
  ClientCore& client() const override { return *core_; }
  bool undoable() const override { return true; }
  void undo(std::function<void()> then) override;
  std::string what() const override { return kind_->describe(*core_, name_); }

 protected:
  /// Run after a recheck or settle step found the hold, before it is reported (FencedLock:
  /// reads the token); nullptr for none.
  virtual std::function<void(Done)> found_step() { return nullptr; }
  /// This acquisition's grant link (grant mode, registering for grants); nullptr for none.
  virtual const sync::GrantLink* grant_link() const { return nullptr; }
  /// The owner's field in the lock's hash (without the kind's suffix).
  std::string field() const { return core_->owner_field(owner_); }

  std::shared_ptr<ClientCore> core_;
  KindPtr kind_;
  std::string name_;
  std::int64_t owner_;
  Duration lease_;
  bool refuse_reentry_;
};

/// SpinLock's acquisition (§10): the reentrant lock's acquire step (lock_acquire.lua) without
/// a publish guard (its releases publish nothing) and without WAIT or undo, as Redisson's
/// spin lock; its reply's PTTL is not used to wait (the spin loop backs off instead,
/// AcquireFsm::Settings::spin).
std::shared_ptr<HoldCountSteps> spin_lock_steps(const std::shared_ptr<ClientCore>& core,
                                                const KindPtr& kind, const std::string& name,
                                                std::int64_t owner, Duration lease);

}  // namespace redisync::detail
