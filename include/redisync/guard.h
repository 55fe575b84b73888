// SPDX-License-Identifier: Apache-2.0
// redisync::Guard: a scoped hold whose destructor never throws.
//
// unlock() never throws, so std::lock_guard and std::unique_lock are safe too; Guard adds a
// scoped hold whose release() can be called early to see the outcome, and whose destructor
// releases as unlock() does: a release that did not succeed is a line for Config::log.
#pragma once

#include <mutex>
#include <utility>

#include "redisync/lock.h"

namespace redisync {

/// Holds any redisync lock kind with lock() and release() (Lock, FairLock, FencedLock,
/// SpinLock, a ReadWriteLock's read_lock()/write_lock()) for a scope.
/// Not copyable; movable. Not thread-safe (the owning thread's hold).
template <class L>
class Guard {
 public:
  /// Blocks until acquired (the kind's lock()); throws what lock() throws.
  explicit Guard(L& lock) : lock_(&lock) { lock_->lock(); }
  /// Adopts a hold the calling thread already took.
  Guard(L& lock, std::adopt_lock_t) noexcept : lock_(&lock) {}
  Guard(Guard&& other) noexcept : lock_(std::exchange(other.lock_, nullptr)) {}
  Guard& operator=(Guard&&) = delete;
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

  /// True once this process has been told the hold was lost (lost-lock handler; see
  /// BasicLock::lost()): asks no server, so it answers while the server is silent. A holder
  /// checks it before work that must not run without the lock. False after release().
  /// Kinds with lost_by_current_thread() only (every BasicLock kind, MultiLock, RedLock).
  bool lost() const {
    return lock_ != nullptr && lock_->lost_by_current_thread();
  }
  /// False once the hold is known lost (no server call then); otherwise asks the server
  /// (is_held_by_current_thread(), which throws when the server cannot answer). False after
  /// release().
  bool held() const { return lock_ != nullptr && lock_->is_held_by_current_thread(); }

  /// Releases now and reports the outcome (released, still_held, not_held, lost, failed).
  /// Afterwards the destructor does nothing.
  ReleaseResult release() noexcept {
    L* lock = std::exchange(lock_, nullptr);
    if (!lock) return ReleaseResult{ReleaseOutcome::not_held, "guard already released"};
    return lock->release();
  }

  /// Never throws: the kind's unlock(), which reports a release that did not succeed as a
  /// line for the Client's Config::log (stderr when none is set), never as an exception.
  ~Guard() {
    if (L* lock = std::exchange(lock_, nullptr)) lock->unlock();
  }

 private:
  L* lock_;
};

}  // namespace redisync
