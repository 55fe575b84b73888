// SPDX-License-Identifier: Apache-2.0
// The acquisition of Lock, NonReentrantLock and FencedLock (the reentrant hash N of
// docs/wire-format.md §2.1) as one record per acquisition, in both handoff modes
// (hash_lock_steps.cpp). The record is the loop's steps and the attempt's request at once: what
// the steps share is kept once, and each request is built when it is sent. The factories are
// for the kinds' loops and for the unit test that pins the requests
// (tests/unit/hash_lock_steps_test.cpp).
//
// Threading: the steps run on the I/O thread; keys() and args() touch no shared state.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sync/locks/hold_count_steps.h"
#include "sync/locks/lock_kind.h"

namespace redisync::detail {

/// What a kind adds to Lock's acquisition.
struct HashLockVariant {
  /// NonReentrantLock (§12): the step refuses the owner's re-entry, reported as a ReentryError.
  bool refuse_reentry = false;
  /// FencedLock (§11): the token counter's key joins the keys.
  bool fenced = false;
  /// FencedLock's acquire-with-token: the acquisition's token is stored here (from the reply,
  /// a grant message, or read after a recheck found the hold). Null: an ordinary acquire.
  std::shared_ptr<std::optional<std::uint64_t>> token;

  static HashLockVariant non_reentrant() {
    HashLockVariant v;
    v.refuse_reentry = true;
    return v;
  }
  static HashLockVariant fenced_lock(std::shared_ptr<std::optional<std::uint64_t>> token) {
    HashLockVariant v;
    v.fenced = true;
    v.token = std::move(token);
    return v;
  }
};

/// FencedLock's token counter beside the lock `name` (§11).
std::string fenced_token_key(const std::string& name);

/// What both modes share: the lock's channel, the owner's hold count as the recheck and
/// settle steps (reading the token when one is wanted), the kind's release as the undo,
/// NON_REENTRANT_REACQUIRE as a ReentryError (HoldCountSteps).
class HashLockSteps : public HoldCountSteps {
 public:
  HashLockSteps(std::shared_ptr<ClientCore> core, KindPtr kind, std::string name,
                std::int64_t owner, Duration lease, HashLockVariant variant)
      : HoldCountSteps(std::move(core), std::move(kind), std::move(name), owner, lease,
                       variant.refuse_reentry),
        fenced_(variant.fenced),
        token_(std::move(variant.token)) {}

  std::string channel() const override;

 protected:
  /// After a recheck or settle step found the hold: the token the counter holds now (nobody
  /// else can have acquired since, and our own re-entries are not in flight); nullptr when
  /// no token is wanted.
  std::function<void(Done)> found_step() override;
  /// Reads a {code, token} reply (§11): stores the token when the code says acquired (-1) or
  /// granted (-3), and returns the code; throws for another shape.
  long long take_token(const net::Reply& reply);

  bool fenced_;
  std::shared_ptr<std::optional<std::uint64_t>> token_;
};

/// Wake mode (and an owner's re-entry in grant mode): `step` (lock_acquire.lua, it behind the
/// non-reentrant guard, or fenced_lock_acquire.lua) behind the publish guard, with the
/// starvation guard's key and claim when Config::starvation_guard is on (starvation_guard.h).
std::shared_ptr<HashLockSteps> guarded_lock_steps(const std::shared_ptr<ClientCore>& core,
                                                  const KindPtr& kind, const std::string& name,
                                                  std::int64_t owner, Duration lease,
                                                  const lua::Script& step,
                                                  HashLockVariant variant = {});

/// Grant mode (docs/wire-format.md §18): lock_grant_acquire.lua, which registers the waiter
/// through `link` and takes the grant made to it; the give-up leaves the registration.
std::shared_ptr<HashLockSteps> grant_lock_steps(const std::shared_ptr<ClientCore>& core,
                                                const KindPtr& kind, const std::string& name,
                                                std::int64_t owner, Duration lease,
                                                std::optional<sync::Clock::time_point> deadline,
                                                std::shared_ptr<sync::GrantLink> link,
                                                HashLockVariant variant = {});

/// The wake-mode loop of Lock, NonReentrantLock and FencedLock: guarded_lock_steps on
/// start_pubsub_loop.
void start_guarded_lock_loop(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                             const std::string& name, std::int64_t owner, LoopStart start,
                             const lua::Script& step, HashLockVariant variant = {});
/// The grant-mode loop of the same kinds: grant_lock_steps on start_pubsub_loop, with `link`.
void start_lock_grant_loop(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                           const std::string& name, std::int64_t owner, LoopStart start,
                           std::shared_ptr<sync::GrantLink> link, HashLockVariant variant = {});

}  // namespace redisync::detail
