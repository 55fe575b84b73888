// SPDX-License-Identifier: Apache-2.0
// The acquisitions of ReadWriteLock's two sides (Redisson's read-write lock, docs/wire-format.md
// §5) as one record per acquisition, in both handoff modes (rw_lock_steps.cpp), on the
// hold-count steps every hash lock shares (HoldCountSteps). The factories serve the kinds'
// loops and the unit test that pins the requests (tests/unit/rw_lock_steps_test.cpp).
//
// Threading: the steps run on the I/O thread; keys() and args() touch no shared state.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sync/locks/hold_count_steps.h"

namespace redisync::detail {

/// The channel both sides' releases publish on, and both sides' waiters wait on: "0" wakes one
/// waiter, "1" (a write release) all of them.
std::string rwlock_channel(const std::string& name);
/// "TAG(N):<reader field>:rwlock_timeout": a reader's markers are this plus ":<k>" (§5.1).
std::string rwlock_marker_prefix(const std::string& name, const std::string& reader_field);
/// Grant mode (sync/acquire/grant.h): the writers waiting for a grant (sorted set, member = W,
/// score = registration deadline). Its own key, not Lock's "redisync_lock_grant:TAG(N)": a
/// grant here is a write hold (mode "write" beside W), which a Lock release on the same name
/// must never hand out. Readers never register (they are never granted: see
/// rwlock_readers_key).
std::string rwlock_grant_key(const std::string& name);
/// Their grant ids (hash, W -> "<grant id>:<attempt>"), as Lock's grant_id_key.
std::string rwlock_grant_id_key(const std::string& name);
/// Grant mode: set while a redisync reader refused by a write hold still waits (string, for a
/// grant lease after its last attempt). A release that frees the lock then wakes the readers
/// instead of granting it, and writers leave the free lock to them: without it, registered
/// writers handed the lock to each other and a reader never got in.
std::string rwlock_readers_key(const std::string& name);
/// Wake mode: the starvation guard's claim (sync/locks/starvation_guard.h), a writer field W.
/// Its own key, as the grant keys: Lock's guard on the same name is another lock's turn.
std::string rwlock_guard_key(const std::string& name);

/// A read lock's acquisition (rwlock_read_acquire.lua). In grant mode a refused reader keeps
/// writers out through rwlock_readers_key for as long as it still waits (`deadline`).
std::shared_ptr<HoldCountSteps> read_lock_steps(const std::shared_ptr<ClientCore>& core,
                                                const KindPtr& kind, const std::string& name,
                                                std::int64_t owner, Duration lease,
                                                std::optional<sync::Clock::time_point> deadline);

/// A write lock's acquisition (rwlock_write_acquire.lua): with the starvation guard in wake
/// mode when Config::starvation_guard is on; with `link` (grant mode, a fresh acquisition) the
/// grant step, which registers the writer, and its give-up. The owner's read hold refuses it
/// with an UpgradeError.
std::shared_ptr<HoldCountSteps> write_lock_steps(const std::shared_ptr<ClientCore>& core,
                                                 const KindPtr& kind, const std::string& name,
                                                 std::int64_t owner, Duration lease,
                                                 std::optional<sync::Clock::time_point> deadline,
                                                 std::shared_ptr<sync::GrantLink> link);

}  // namespace redisync::detail
