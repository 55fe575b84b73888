// redisync::Lock: Redisson's reentrant RLock. Layout and semantics: wire-format spec §2, §3, §13.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <asio/io_context.hpp>

#include "redisync/async.h"
#include "redisync/config.h"

namespace redisync {

namespace detail {
class ClientCore;
struct LockAccess;  // MultiLock's access to a member's internals (src/sync/multi_lock_member.cpp)
/// Starts an acquisition on the I/O thread; `done(error, acquired)`.
/// lease <= 0: watchdog mode. wait < 0: no limit; wait == 0: one attempt.
void start_lock_acquire(const std::shared_ptr<ClientCore>& core, const std::string& name,
                        std::int64_t owner, Duration lease, Duration wait,
                        std::function<void(std::exception_ptr, bool)> done);
void start_lock_release(const std::shared_ptr<ClientCore>& core, const std::string& name,
                        std::int64_t owner, std::function<void(std::exception_ptr)> done);
asio::io_context& io_of(const std::shared_ptr<ClientCore>& core);
}  // namespace detail

/// What release() found.
enum class ReleaseOutcome {
  released,     ///< this was the last hold; the lock is free and one waiter was woken
  still_held,   ///< a reentrant hold was dropped; the owner still holds it (count > 0)
  not_held,     ///< the caller did not hold it (unlock() would raise NotOwnerError)
  lost,         ///< the caller held it but it expired or was removed (LockLostError)
  failed,       ///< the server could not be reached; see ReleaseResult::error
};

struct ReleaseResult {
  ReleaseOutcome outcome;
  std::string error;  ///< for `failed`: what went wrong
  explicit operator bool() const {
    return outcome == ReleaseOutcome::released || outcome == ReleaseOutcome::still_held;
  }
};

/// A distributed reentrant lock on Redis, compatible with Redisson's RLock: a Java service
/// using Redisson's getLock(name) on the same server excludes and is excluded by this lock.
///
/// Meets the standard *TimedLockable* requirements, so std::unique_lock, std::lock_guard and
/// std::scoped_lock (several locks, deadlock-free) work (unlock() never throws; see there).
/// Ownership is per thread (blocking
/// API) or per explicit owner id (async API): the holder field is "<client id>:<owner id>".
///
/// Leases: lock(), try_lock() and try_lock_for(wait) take the watchdog lease
/// (Config::lock_watchdog_timeout, default 30 s) and the Client renews it every third of
/// that while the lock is held; a process that dies stops renewing, so its lock frees within
/// the lease. The overloads with an explicit `lease` are never renewed.
///
/// Waiting is push-based: a waiter subscribes to the lock's channel and sleeps until a release
/// message or the holder's remaining lease, then retries; it never polls.
///
/// Thread safety: a Lock handle may be shared between threads; each thread is its own owner.
/// Copy/move: cheap to copy (a name and a reference to the Client's internals).
class Lock {
 public:
  Lock(std::shared_ptr<detail::ClientCore> core, std::string name);

  const std::string& name() const { return name_; }

  /// Blocks until acquired (watchdog lease). Reentrant: each call needs one unlock().
  /// Throws ConnectionError / TimeoutError if the server cannot be reached, ServerError if
  /// the key holds another type.
  void lock();
  /// Blocks until acquired, with a fixed lease (never renewed). Throws InvalidArgument if
  /// lease <= 0.
  void lock(Duration lease);
  /// One attempt, no waiting (watchdog lease on success).
  bool try_lock();
  /// Waits up to `wait` (watchdog lease on success). wait <= 0 is one attempt.
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& wait) {
    return try_acquire(to_wait(wait), Duration{0});
  }
  /// Waits up to `wait`; on success the lock has the fixed `lease` (never renewed).
  /// Throws InvalidArgument if lease <= 0.
  bool try_lock_for(Duration wait, Duration lease);
  /// Waits until `deadline` (any clock; converted to a wait from now).
  template <class Clock, class Dur>
  bool try_lock_until(const std::chrono::time_point<Clock, Dur>& deadline) {
    return try_lock_for(deadline - Clock::now());
  }
  /// Drops one hold of the calling thread. Never throws (BasicLockable: std::lock_guard and
  /// std::unique_lock call it from a noexcept destructor). What it cannot do is reported, not
  /// raised: a hold found lost goes to the lost-lock handler (Client::on_lock_lost) unless
  /// the watchdog already reported it; a release the server could not answer stops renewing
  /// the hold (the lock frees when its lease ends) and is a line on stderr, as is an unlock
  /// by a non-holder. Use unlock_checked() or release() to see the outcome.
  void unlock() noexcept;
  /// unlock() that raises: NotOwnerError if this thread does not hold the lock, LockLostError
  /// if it held it but the lock expired or was removed meanwhile, ConnectionError /
  /// TimeoutError if the server could not answer (the hold is then kept and still renewed).
  void unlock_checked();
  /// Like unlock_checked() but never throws: reports what happened.
  ReleaseResult release() noexcept;
  /// Deletes the lock whoever holds it and wakes a waiter. True if it was held.
  bool force_unlock();

  /// True if anyone holds it (reads the master).
  bool is_locked() const;
  /// Asks the server, unless this process already knows the hold is lost (the lost-lock
  /// handler was told): then false at once, even while the server does not answer.
  bool is_held_by_current_thread() const;
  bool is_held_by_thread(std::int64_t owner) const;
  /// Holds of the calling thread (0 if none).
  int hold_count() const;
  /// Remaining lease: Duration(-2) if not locked, Duration(-1) if locked without expiry.
  Duration remaining_lease() const;
  /// The Redis hash field of `owner` ("<client id>:<owner>").
  std::string owner_field(std::int64_t owner) const;

  // --- Async forms: explicit owner id (see Client::new_owner_id()), Asio completion token ---

  /// Completion: void(std::exception_ptr). Watchdog lease; waits without limit.
  template <class Token>
  auto async_lock(std::int64_t owner, Token&& token) {
    return async_lock(owner, Duration{0}, std::forward<Token>(token));
  }
  /// Completion: void(std::exception_ptr). lease <= 0 means watchdog lease.
  template <class Token>
  auto async_lock(std::int64_t owner, Duration lease, Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr)>(
        [core = core_, name = name_, owner, lease](auto handler) {
          auto done = detail::wrap_handler<decltype(handler), asio::io_context::executor_type>(
              std::move(handler), detail::io_of(core).get_executor());
          detail::start_lock_acquire(core, name, owner, lease, Duration{-1},
                                     [done](std::exception_ptr e, bool) { done(e); });
        },
        token);
  }
  /// Completion: void(std::exception_ptr, bool acquired). wait <= 0: one attempt;
  /// lease <= 0: watchdog lease.
  template <class Token>
  auto async_try_lock(std::int64_t owner, Duration wait, Duration lease, Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr, bool)>(
        [core = core_, name = name_, owner, wait, lease](auto handler) {
          detail::start_lock_acquire(
              core, name, owner, lease, detail::clamp_wait(wait),
              detail::wrap_handler<decltype(handler), asio::io_context::executor_type, bool>(
                  std::move(handler), detail::io_of(core).get_executor()));
        },
        token);
  }
  /// Completion: void(std::exception_ptr) with NotOwnerError / LockLostError as unlock().
  template <class Token>
  auto async_unlock(std::int64_t owner, Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr)>(
        [core = core_, name = name_, owner](auto handler) {
          detail::start_lock_release(
              core, name, owner,
              detail::wrap_handler<decltype(handler), asio::io_context::executor_type>(
                  std::move(handler), detail::io_of(core).get_executor()));
        },
        token);
  }

 private:
  friend struct detail::LockAccess;
  template <class Rep, class Period>
  static Duration to_wait(const std::chrono::duration<Rep, Period>& d) {
    return detail::to_wait_ms(d);
  }
  bool try_acquire(Duration wait, Duration lease);

  std::shared_ptr<detail::ClientCore> core_;
  std::string name_;
};

}  // namespace redisync
