// SPDX-License-Identifier: Apache-2.0
// The Lua scripts of src/lua/*.lua, embedded at build time (cmake/EmbedLua.cmake).
// Each atomic step of a primitive is one script, run by EVALSHA (see net/executor.h). A
// script's shared sub-steps (files that only define local functions or guard the step) are
// named on its `--@requires` line and are part of its source here: a call site sends
// lua::lock_release as it is.
#pragma once

#include <string_view>

namespace redisync::lua {

/// One embedded script: a stable name (the file's stem) and its whole source text, the shared
/// sub-steps its file requires (`--@requires`) in front.
struct Script {
  std::string_view name;
  std::string_view source;
};

// One declaration per file in src/lua/; the definitions are generated.
extern const Script lock_acquire;
extern const Script lock_release;
extern const Script lock_force_release;
extern const Script lock_renew;
// Cluster: one call renews hashes of any slots of one node (docs/wire-format.md §3.2).
extern const Script lock_renew_node;
extern const Script lock_guard_drop;
// Shared sub-steps of the lock releases: the release record read first, every outcome recorded
// (docs/wire-format.md §1.8), and the reentrant hash's one-hold release.
extern const Script release_record;
// Fair lock (§4), read-write lock (§5), fenced lock (§11). fair_lock_dead_heads is the shared
// §4.2 sub-step the fair lock's scripts are sent with (see sync/locks/fair_lock.cpp).
extern const Script fair_lock_dead_heads;
extern const Script fair_lock_acquire;
extern const Script fair_lock_give_up;
// The fair lock's steps of a grant-capable waiter (its acquire, its give-up).
extern const Script fair_lock_grant_acquire;
extern const Script fair_lock_grant_give_up;
extern const Script fair_lock_release;
extern const Script fair_lock_force_release;
extern const Script rwlock_read_acquire;
extern const Script rwlock_read_release;
extern const Script rwlock_write_acquire;
extern const Script rwlock_write_grant_acquire;
extern const Script rwlock_write_release;
extern const Script rwlock_force_release;
extern const Script rwlock_is_locked;
extern const Script rwlock_read_renew;
extern const Script fenced_lock_acquire;
// Direct handoff (grant mode, sync/acquire/grant.h): grant_pass_on is the shared sub-step the grant
// release and give-up scripts are sent with.
extern const Script grant_pass_on;
extern const Script lock_grant_acquire;
extern const Script lock_grant_release;
extern const Script lock_grant_give_up;
// Sets a granted hold's own lease (shortening the grant lease when that was longer).
extern const Script grant_extend;
// A MultiLock's lease set on a member its owner also holds in watchdog mode (never shortens).
extern const Script multi_lock_member_expiry;
// The recheck and settle of a grant-mode acquisition: the owner's count, read with the grant
// mark and the lock's expiry (a hold found may be a grant not taken yet).
extern const Script hold_grant_check;
// FairLock's grant sub-step (release and give-up; also the release's head wake-up in wake mode).
extern const Script fair_grant_pass_on;

// Shared sub-step "may this user publish?", required by the scripts that write, then publish.
extern const Script publish_check;
// Shared guard in front of the acquire steps whose release publishes: the same check, on the
// channel that release will use, before the step writes (lua/publish_guard.h).
extern const Script publish_guard;
// The same guard for the grant channel a grant-mode release publishes on (lua/publish_guard.h).
extern const Script grant_publish_guard;
// Shared sub-step "set the count if absent, then announce it", sent (after publish_check) in
// front of the try-set scripts of the semaphore, permit-expirable semaphore and latch.
extern const Script set_count_if_absent;
// Shared sub-step "refused, or answered from the call's record?", sent (after publish_check) in
// front of the recorded steps that publish: the semaphore's release, the latch's count-down.
extern const Script refused_or_recorded;
// Counting semaphore (semaphore.cpp).
extern const Script semaphore_try_acquire;
extern const Script semaphore_release;
extern const Script semaphore_release_if_exists;
extern const Script semaphore_drain;
extern const Script semaphore_try_set_permits;
// Permit-expirable semaphore (permit_expirable_semaphore.cpp). Its scripts are sent with
// publish_check and permit_expirable_semaphore_common (the shared sub-steps) in front.
extern const Script permit_expirable_semaphore_common;
extern const Script permit_expirable_semaphore_acquire;
extern const Script permit_expirable_semaphore_release;
extern const Script permit_expirable_semaphore_release_many;
extern const Script permit_expirable_semaphore_available;
extern const Script permit_expirable_semaphore_set_permits;
extern const Script permit_expirable_semaphore_try_set_permits;
extern const Script permit_expirable_semaphore_add_permits;
extern const Script permit_expirable_semaphore_update_lease;
extern const Script permit_expirable_semaphore_remaining_lease;
// Read only, no preludes: the server's remaining lease of one permit (permit_lease_watch.h).
extern const Script permit_expirable_semaphore_expiry;
// Count-down latch (count_down_latch.cpp).
extern const Script count_down_latch_try_set_count;
extern const Script count_down_latch_count_down;
extern const Script count_down_latch_delete;
// Rate limiter (rate_limiter.cpp). rate_limiter_window is the shared sub-steps the acquire,
// release and available scripts are sent with.
extern const Script rate_limiter_window;
extern const Script rate_limiter_acquire;
extern const Script rate_limiter_release;
extern const Script rate_limiter_available;
extern const Script rate_limiter_try_set_rate;
extern const Script rate_limiter_set_rate;
// Non-reentrant lock kinds (non_reentrant_lock.cpp): the guard in front of their acquire steps.
extern const Script non_reentrant_guard;
extern const Script non_reentrant_lock_acquire;
extern const Script non_reentrant_fair_lock_acquire;

}  // namespace redisync::lua
