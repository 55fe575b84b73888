// SPDX-License-Identifier: Apache-2.0
// redisync::BasicLock: the API every exclusive lock kind shares (Lock, FairLock, FencedLock,
// SpinLock, and the two sides of a ReadWriteLock).
#pragma once

#include <asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>

#include "redisync/export.h"
#include "redisync/async.h"
#include "redisync/config.h"
#include "redisync/release_result.h"

namespace redisync {

namespace detail {
class ClientCore;
class LockKind;  // the kind's atomic steps and waiting strategy (internal)
struct LockAccess;  // MultiLock's access to a member's internals (src/sync/multi/multi_lock_member.cpp)
}  // namespace detail

/// A distributed reentrant lock of some kind (see the derived classes for the layout each one
/// uses on the server).
///
/// Meets the standard *TimedLockable* requirements, so std::unique_lock, std::lock_guard and
/// std::scoped_lock work (unlock() never throws; see there). Ownership is per thread (blocking API) or per explicit owner id
/// (async API): the holder field is "<client id>:<owner id>".
///
/// Leases: lock(), try_lock() and try_lock_for(wait) take the watchdog lease
/// (Config::lock_watchdog_timeout, default 30 s), renewed by the Client every third of it while
/// held. The overloads with an explicit `lease` are never renewed.
///
/// Thread safety: a handle may be shared between threads; each thread is its own owner.
/// Copy/move: cheap to copy (a name and references to the Client's internals).
class REDISYNC_API BasicLock {
 public:
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
  /// Waits up to `wait` (watchdog lease on success). wait <= 0 is one attempt; a wait whose
  /// deadline the steady clock cannot represent (beyond ~292 years) waits without limit.
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
  /// the hold (the lock frees when its lease ends) and is a line (Config::log, else stderr),
  /// as is an unlock by a non-holder. Use unlock_checked() or release() to see the outcome.
  void unlock() noexcept;
  /// unlock() that raises: NotOwnerError if this thread does not hold the lock, LockLostError
  /// if it held it but the lock expired or was removed meanwhile, ConnectionError /
  /// TimeoutError if the server could not answer (the hold is then kept and still renewed).
  void unlock_checked();
  /// Like unlock_checked() but never throws: reports what happened.
  ReleaseResult release() noexcept;
  /// Deletes the lock whoever holds it and wakes waiters. True if it was held.
  bool force_unlock();

  /// True if anyone holds it (reads the master).
  bool is_locked() const;
  /// Asks the server, unless this process already knows the hold is lost (the lost-lock
  /// handler was told): then false at once, even while the server does not answer.
  bool is_held_by_current_thread() const;
  bool is_held_by_thread(std::int64_t owner) const;
  /// True when this process has been told that `owner`'s hold was lost (the watchdog found
  /// the key or field gone, or the hold's local lease deadline passed without a confirmed
  /// renewal: the moment the lost-lock handler runs) and it has not been released since.
  /// Asks no server, never blocks on one, and may be called from any thread, including an
  /// async completion or coroutine on the Client's I/O thread (where the blocking
  /// is_held_by_thread() is refused). False for a hold never taken. Throws ClientClosedError
  /// after the Client is closed.
  bool lost(std::int64_t owner) const;
  /// lost() for the calling thread's hold.
  bool lost_by_current_thread() const;
  /// Holds of the calling thread (0 if none).
  int hold_count() const;
  /// Remaining lease of the lock key: Duration(-2) if absent, Duration(-1) without expiry.
  Duration remaining_lease() const;
  /// The Redis hash field of `owner` for this kind ("<client id>:<owner>", or with ":write").
  std::string owner_field(std::int64_t owner) const;

  // --- Async forms: explicit owner id (see Client::new_owner_id()), Asio completion token ---

  /// Completion: void(std::exception_ptr). Watchdog lease; waits without limit.
  template <class Token>
  auto async_lock(std::int64_t owner, Token&& token) {
    return async_lock(owner, Duration{0}, std::forward<Token>(token));
  }
  /// Completion: void(std::exception_ptr). lease <= 0 means watchdog lease.
  ///
  /// Cancellable (both async acquires): a cancellation emitted on the handler's cancellation
  /// slot (asio::bind_cancellation_slot, `co_await (lock.async_lock(...) || timer...)`) before
  /// the lock is acquired ends the wait with CancelledError, leaving nothing behind (no
  /// queue entry, no grant registration, no hold). An attempt already on its way decides:
  /// one that acquired completes as acquired, and the caller owns the hold.
  template <class Token>
  auto async_lock(std::int64_t owner, Duration lease, Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr)>(
        [self = *this, owner, lease](auto handler) {
          auto cancel = detail::connect_cancellation(handler, self.core_);
          auto done = self.wrap<void>(std::move(handler));
          self.start_acquire(owner, lease, Duration{-1},
                             [done](std::exception_ptr e, bool) { done(e); }, std::move(cancel));
        },
        token);
  }
  /// Completion: void(std::exception_ptr, bool acquired). wait <= 0: one attempt;
  /// lease <= 0: watchdog lease. Cancellable as async_lock.
  template <class Token>
  auto async_try_lock(std::int64_t owner, Duration wait, Duration lease, Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr, bool)>(
        [self = *this, owner, wait, lease](auto handler) {
          auto cancel = detail::connect_cancellation(handler, self.core_);
          self.start_acquire(owner, lease, detail::clamp_wait(wait),
                             self.wrap<bool>(std::move(handler)), std::move(cancel));
        },
        token);
  }
  /// Completion: void(std::exception_ptr) with NotOwnerError / LockLostError as unlock().
  template <class Token>
  auto async_unlock(std::int64_t owner, Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr)>(
        [self = *this, owner](auto handler) {
          self.start_release(owner, self.wrap<void>(std::move(handler)));
        },
        token);
  }

 protected:
  friend struct detail::LockAccess;
  BasicLock(std::shared_ptr<detail::ClientCore> core, std::string name,
            std::shared_ptr<const detail::LockKind> kind);

  template <class Rep, class Period>
  static Duration to_wait(const std::chrono::duration<Rep, Period>& d) {
    return detail::to_wait_ms(d);
  }
  /// Throws InvalidArgument unless 0 < lease <= max_duration.
  void check_lease(Duration lease) const;

  /// Wraps an Asio completion handler into a callback that completes on the handler's
  /// executor (default: the Client's I/O thread). Arg = void for void(std::exception_ptr).
  template <class Arg, class Handler>
  auto wrap(Handler&& handler) const {
    if constexpr (std::is_void_v<Arg>) {
      return detail::wrap_handler<Handler, asio::io_context::executor_type>(
          std::forward<Handler>(handler), io().get_executor());
    } else {
      return detail::wrap_handler<Handler, asio::io_context::executor_type, Arg>(
          std::forward<Handler>(handler), io().get_executor());
    }
  }
  asio::io_context& io() const;
  /// Starts an acquisition on the I/O thread. lease <= 0: watchdog; wait < 0: no limit.
  /// `cancel`: the async caller's cancellation (detail::connect_cancellation), if any.
  void start_acquire(std::int64_t owner, Duration lease, Duration wait,
                     std::function<void(std::exception_ptr, bool)> done,
                     std::shared_ptr<detail::CancelSignal> cancel = nullptr) const;
  void start_release(std::int64_t owner, std::function<void(std::exception_ptr)> done) const;

  std::shared_ptr<detail::ClientCore> core_;
  std::string name_;
  std::shared_ptr<const detail::LockKind> kind_;

 private:
  bool try_acquire(Duration wait, Duration lease);
  /// Releases one hold of the calling thread; throws only when the server cannot answer.
  ReleaseOutcome release_outcome();
  /// The lock's description for a log line, or its name if even that fails.
  std::string describe_or_name() const noexcept;
};

}  // namespace redisync
