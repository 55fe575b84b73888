// SPDX-License-Identifier: Apache-2.0
// redisync::ReadWriteLock: Redisson's read-write lock, getReadWriteLock. Layout and semantics:
// docs/wire-format.md §5 (and §3, §13).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "redisync/export.h"
#include "redisync/basic_lock.h"

namespace redisync {

/// The read side of a ReadWriteLock (Redisson's readLock()). Many owners may hold it at once;
/// it excludes writers. Reentrant; the write holder may also take it (downgrade).
///
/// Each read hold has its own lease marker key on the server, so a reader that dies stops
/// counting once its lease ends even while other readers keep the lock. In watchdog mode the
/// Client renews this owner's markers (only its own, never other clients').
/// Lost-lock reports (Client::on_lock_lost) name it "<name> (read lock)".
/// is_locked(): someone reads (including a writer that also reads).
class REDISYNC_API ReadLock : public BasicLock {
 public:
  ReadLock(std::shared_ptr<detail::ClientCore> core, std::string name);
};

/// The write side of a ReadWriteLock (Redisson's writeLock()): exclusive. Reentrant.
///
/// Improvement over Redisson: an owner that holds the read lock and asks for the write lock
/// gets UpgradeError at once (Redisson would wait forever: its own read hold never goes away).
/// Release the read lock first, or take the write lock first and then the read lock.
/// Lost-lock reports name it "<name> (write lock)". is_locked(): someone writes.
class REDISYNC_API WriteLock : public BasicLock {
 public:
  WriteLock(std::shared_ptr<detail::ClientCore> core, std::string name);
};

/// A distributed read-write lock compatible with Redisson's RReadWriteLock: a Java service
/// using getReadWriteLock(name) on the same server shares it.
///
/// Meets the standard *SharedTimedLockable* requirements: lock()/try_lock*()/unlock() are the
/// write lock, lock_shared()/try_lock_shared*()/unlock_shared() the read lock, so
/// std::unique_lock, std::scoped_lock and std::shared_lock work. read_lock() and write_lock()
/// give the two sides with the full Lock-like API (leases, async forms, queries).
///
/// Waiting is push-based on `redisson_rwlock:{name}`: a read release that frees the lock
/// wakes one waiter, a write release wakes every waiter.
/// No fairness: new readers join while writers wait (as Redisson). Writers have Lock's
/// starvation guard (Config::starvation_guard): one that has waited that long claims the next
/// write turn from other redisync writers (a redisync-only key; Redisson clients ignore it).
/// In grant mode (Config::handoff) a waiting reader takes the next turn from the registered
/// writers instead, so writers handing the lock to each other cannot starve it.
///
/// Thread safety: a handle may be shared between threads; each thread is its own owner.
/// Copy/move: cheap to copy.
class REDISYNC_API ReadWriteLock {
 public:
  ReadWriteLock(std::shared_ptr<detail::ClientCore> core, std::string name);

  const std::string& name() const { return read_.name(); }
  ReadLock read_lock() const { return read_; }
  WriteLock write_lock() const { return write_; }

  // --- exclusive (write) ---
  void lock() { write_.lock(); }
  void lock(Duration lease) { write_.lock(lease); }
  bool try_lock() { return write_.try_lock(); }
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& wait) {
    return write_.try_lock_for(wait);
  }
  bool try_lock_for(Duration wait, Duration lease) { return write_.try_lock_for(wait, lease); }
  template <class Clock, class Dur>
  bool try_lock_until(const std::chrono::time_point<Clock, Dur>& deadline) {
    return write_.try_lock_until(deadline);
  }
  /// Never throws (see BasicLock::unlock()); unlock_checked() raises what it finds.
  void unlock() noexcept { write_.unlock(); }
  void unlock_checked() { write_.unlock_checked(); }

  // --- shared (read) ---
  void lock_shared() { read_.lock(); }
  void lock_shared(Duration lease) { read_.lock(lease); }
  bool try_lock_shared() { return read_.try_lock(); }
  template <class Rep, class Period>
  bool try_lock_shared_for(const std::chrono::duration<Rep, Period>& wait) {
    return read_.try_lock_for(wait);
  }
  bool try_lock_shared_for(Duration wait, Duration lease) {
    return read_.try_lock_for(wait, lease);
  }
  template <class Clock, class Dur>
  bool try_lock_shared_until(const std::chrono::time_point<Clock, Dur>& deadline) {
    return read_.try_lock_until(deadline);
  }
  /// Never throws (see BasicLock::unlock()); unlock_shared_checked() raises what it finds.
  void unlock_shared() noexcept { read_.unlock(); }
  void unlock_shared_checked() { read_.unlock_checked(); }

 private:
  ReadLock read_;
  WriteLock write_;
};

}  // namespace redisync
