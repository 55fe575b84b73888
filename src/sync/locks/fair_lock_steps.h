// SPDX-License-Identifier: Apache-2.0
// The acquisition of FairLock and NonReentrantFairLock (Redisson's fair lock, docs/wire-format.md
// §4) as one record per acquisition, in both handoff modes (fair_lock_steps.cpp): the attempt,
// the hold-count recheck and settle, the undo, and leaving the queue when the wait ends without
// the lock. The factory serves the kind's loop and the unit test that pins the requests
// (tests/unit/fair_lock_steps_test.cpp).
//
// Threading: the steps run on the I/O thread; keys() and args() touch no shared state.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "lua/scripts.h"
#include "sync/locks/hold_count_steps.h"
#include "sync/locks/lock_kind.h"

namespace redisync::detail {

/// The fair lock's queue of waiting owner fields (§4).
std::string fair_queue_key(const std::string& name);
/// The queue's deadlines by owner field (§4).
std::string fair_timeout_key(const std::string& name);
/// Grant mode: the grant-capable waiters, "<deadline>:<allowance>" by owner field
/// (fair_grant_pass_on.lua). A hash, not Lock's sorted set: only the queue head is ever granted,
/// and a grant needs that head's wait allowance.
std::string fair_grant_key(const std::string& name);
/// The scripts' former "now" argument: they read the server's TIME instead (one clock for every
/// client; docs/safety.md "Clocks"). The slot is kept so the argument layout is stable.
inline constexpr const char* kFairUnusedNow = "0";
/// What one fair-lock acquisition is: its kind's flavour and how it waits.
struct FairAcquisition {
  bool reentrant = true;  ///< false: NonReentrantFairLock (§12)
  bool queueing = true;   ///< false: one attempt that never joins the queue (§4.4, wait 0)
  /// Grant mode, queueing: the acquisition's grant link (grant_link), else null.
  std::shared_ptr<sync::GrantLink> link;
  std::optional<sync::Clock::time_point> deadline;  ///< the wait's end, for the link's attempts
};

/// The hold-count steps (HoldCountSteps) on the fair lock's queue.
class FairLockSteps final : public HoldCountSteps {
 public:
  FairLockSteps(std::shared_ptr<ClientCore> core, KindPtr kind, std::string name,
                std::int64_t owner, Duration lease, FairAcquisition how);

  /// Each waiter listens on its own channel: a release wakes only the head (§4.8).
  std::string channel() const override;
  /// Notes that the wait ended without the lock: finish() then leaves the queue.
  void give_up() override { gave_up_ = true; }

  const lua::Script& script() const override { return *script_; }
  std::vector<std::string> keys() const override;
  std::vector<std::string> args() override;
  sync::AttemptResult parse(const net::Reply& reply) override;

  /// The acquisition's completion: a waiter that stops waiting (timed out, failed) leaves the
  /// queue (§4.5), and in grant mode its registration, before `done` hears of it, so nothing of
  /// it is left behind once try_lock_for() returns.
  void finish(std::exception_ptr error, const sync::AcquireOutcome& outcome, LoopDone done);

 protected:
  const sync::GrantLink* grant_link() const override { return how_.link.get(); }

 private:
  // Wait allowance A (§4.1): the configured one for every redisync waiter, whatever its wait
  // (Redisson takes the caller's wait when there is one). redisync waiters refresh their
  // deadlines as they poll, so a short A costs a live waiter nothing, and a killed or stopped
  // one holds the head of the queue for about A; and one A for all keeps the deadlines of a
  // queue consistent (a pop subtracts the popper's A from everyone).
  Duration allowance_;
  FairAcquisition how_;
  const lua::Script* script_;  // the kind's step behind the publish guard
  int idle_polls_ = 0;         // polls in a row that found no estimate (sync::fair_poll_ms)
  bool gave_up_ = false;
};

std::shared_ptr<FairLockSteps> fair_lock_steps(const std::shared_ptr<ClientCore>& core,
                                               const KindPtr& kind, const std::string& name,
                                               std::int64_t owner, Duration lease,
                                               FairAcquisition how);

}  // namespace redisync::detail
