// SPDX-License-Identifier: Apache-2.0
// redisync::MultiLock: hold several locks (of any kinds, possibly on different servers) as one.
// Algorithm and parameters: docs/wire-format.md §6 (client-side only; no extra keys). RedLock, the
// majority variant, is in redisync/red_lock.h; guarantees and limits: docs/redlock.md.
#pragma once

#include <asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "redisync/export.h"
#include "redisync/async.h"
#include "redisync/basic_lock.h"
#include "redisync/config.h"
#include "redisync/errors.h"
#include "redisync/lock.h"

namespace redisync {

class ReadWriteLock;

namespace detail {
class MultiLockMember;
struct MultiLockState;

/// What distinguishes RedLock from MultiLock (docs/wire-format.md §6 table).
struct REDISYNC_API MultiLockPolicy {
  int tolerated_failures = 0;   ///< members that may fail per walk (RedLock: M - (M/2 + 1))
  bool split_wait = false;      ///< each member waits max(remaining / M, 1 ms), not all of it
  bool tolerant = false;        ///< release ignores unreachable members; held = on a majority
  bool check_validity = false;  ///< a success whose validity is <= 0 counts as a failure
};
}  // namespace detail

/// One member of a MultiLock / RedLock: any exclusive lock handle. Converts implicitly from
/// Lock, FairLock, FencedLock, SpinLock, ReadLock, WriteLock (any BasicLock) and ReadWriteLock
/// (its write lock), so `MultiLock{a, b, c}` takes a mix of kinds.
class REDISYNC_API AnyLock {
 public:
  AnyLock(const BasicLock& lock);      // NOLINT(google-explicit-constructor): by design
  AnyLock(const ReadWriteLock& lock);  // NOLINT(google-explicit-constructor)

  const std::string& name() const;
  /// "<kind> '<name>' on <server>", as used in reports and errors.
  std::string describe() const;

 private:
  friend class MultiLock;
  std::shared_ptr<const detail::MultiLockMember> impl_;
};

/// What happened on one member during an acquisition attempt.
enum class MemberOutcome {
  acquired,         ///< taken (and kept, unless the attempt as a whole failed)
  held_by_another,  ///< the server answered: someone else holds it
  timed_out,        ///< no answer within the member's wait plus the reply timeout
  unreachable,      ///< connection refused / dropped, or the client was closed
  credentials_refused,  ///< the server refused the Client's password or user (AuthError)
  error,            ///< the server answered with an error (e.g. WRONGTYPE)
  not_attempted,    ///< the attempt ended (success or out of time) before reaching it
};

/// "acquired", "held by another", "timed out", "unreachable", "credentials refused", "error",
/// "not attempted".
REDISYNC_API const char* to_string(MemberOutcome outcome);

struct REDISYNC_API MemberReport {
  std::string member;  ///< "<kind> '<name>' on <server>"
  MemberOutcome outcome = MemberOutcome::not_attempted;
  std::string detail;  ///< e.g. "remaining lease 2400 ms", the connection error's text
};

/// The outcome of one try (its last pass over the members, docs/wire-format.md §6 steps 2-4).
struct REDISYNC_API AttemptReport {
  bool acquired = false;
  /// On success: the time the hold is still guaranteed, measured from when the attempt began:
  /// (lease of the members needed) - (time the attempt took) - (clock drift allowance
  /// 0.01 x lease + 2 ms). Watchdog mode: computed from the watchdog lease (renewed while held).
  Duration validity{0};
  Duration elapsed{0};  ///< how long the attempt took
  int passes = 0;       ///< walks over the members (a failed walk restarts while time remains)
  std::vector<MemberReport> members;  ///< of the last pass, in member order

  /// How many members answered but were held by another (contention), and how many failed
  /// for other reasons (timed out, unreachable, credentials refused, error).
  int contended() const;
  int failed() const;
  /// One line per member: "lock 'x' on 127.0.0.1:7001: held by another (remaining lease ...)".
  std::string describe() const;
};

/// The lock could not be taken because too many members failed for reasons other than
/// contention (unreachable, timed out, error). what() lists every member's outcome; report()
/// has them as data.
class REDISYNC_API MultiLockError : public Error {
 public:
  MultiLockError(const std::string& what, AttemptReport report)
      : Error(errc::multi_lock_failed, what), report_(std::move(report)) {}
  const AttemptReport& report() const noexcept { return report_; }

 private:
  AttemptReport report_;
};

struct REDISYNC_API MultiLockOptions {
  /// How long past its own wait a member's answer is awaited before it counts as "timed out"
  /// and the walk moves on (a paused or partitioned server must not stall the attempt). A
  /// member that answers later is released (or its possible hold undone) when it does.
  Duration reply_timeout{500};
};

/// Holds all of several locks, possibly of different kinds and on different servers
/// (Clients), as one lock (Redisson RedissonMultiLock, docs/wire-format.md §6). All-or-nothing: when an
/// attempt fails, every member it took is released again.
///
///     redisync::MultiLock both{a.lock("orders"), b.fair_lock("stock")};
///     std::unique_lock guard(both);
///
/// Meets *TimedLockable* (lock, try_lock, try_lock_for, try_lock_until, unlock), so
/// std::unique_lock works; redisync::Guard too. Leases as for Lock: without a lease every
/// member is taken in watchdog mode and renewed by its Client; with a lease every member's key
/// is set to expire exactly `lease` after success (docs/wire-format.md §6 step 5).
///
/// Members are tried one at a time in the order given. lock() waits without limit while
/// members are held by others, but throws MultiLockError when a walk finds members
/// unreachable / timed out / failing (more than the variant tolerates); the try forms return
/// false instead and last_attempt() says what happened on each member.
///
/// Ownership is per thread (blocking API) or per explicit owner id (async API), as for Lock.
/// Reentrant: each successful lock needs one unlock.
/// Thread safety: a handle may be shared between threads. Copies share state (holds, last
/// attempt). Blocking calls must not run on a Client's I/O thread.
class REDISYNC_API MultiLock {
 public:
  /// The shortest lease a lock with the validity check (RedLock) accepts: below it the drift
  /// allowance (0.01 x lease + 2 ms) leaves no validity, and every attempt would fail.
  static constexpr Duration kMinValidityLease{10};

  /// Throws InvalidArgument if `members` is empty.
  MultiLock(std::initializer_list<AnyLock> members);
  explicit MultiLock(std::vector<AnyLock> members, MultiLockOptions options = {});

  /// "multi[<name1>, <name2>...]" (for messages and Guard).
  std::string name() const;
  std::size_t size() const;
  /// Each member's "<kind> '<name>' on <server>", in order.
  std::vector<std::string> members() const;

  /// Blocks until every member is held (watchdog leases). Throws MultiLockError (see above).
  void lock();
  /// Same with a fixed lease (never renewed). Throws InvalidArgument if lease <= 0.
  void lock(Duration lease);
  /// One attempt on each member, no waiting.
  bool try_lock();
  /// Waits up to `wait` in total. wait <= 0 is one attempt on each member.
  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& wait) {
    return try_acquire(to_wait(wait), Duration{0}).acquired;
  }
  /// Waits up to `wait`; on success every member has the fixed `lease`. Throws
  /// InvalidArgument if lease <= 0.
  bool try_lock_for(Duration wait, Duration lease);
  template <class Clock, class Dur>
  bool try_lock_until(const std::chrono::time_point<Clock, Dur>& deadline) {
    return try_lock_for(deadline - Clock::now());
  }
  /// The try with its full report (acquired, validity, each member's outcome). lease <= 0:
  /// watchdog leases.
  AttemptReport try_acquire(Duration wait, Duration lease = Duration{0});
  /// The report of the last attempt finished through this handle (or a copy), any owner.
  AttemptReport last_attempt() const;

  /// Releases what the calling thread's last acquisition took. Never throws (BasicLockable:
  /// std guards call it from a noexcept destructor): a release that did not succeed on every
  /// member is a line (Config::log, else stderr) naming each problem; members found lost are
  /// reported to their Client's lost-lock handler by its watchdog. unlock_checked() /
  /// release() report.
  void unlock() noexcept;
  /// unlock() that raises NotOwnerError, LockLostError or ConnectionError / TimeoutError
  /// naming the member (after releasing every other member).
  void unlock_checked();
  /// Like unlock_checked() but never throws. released: every member released; still_held: a reentrant
  /// hold remains; otherwise the worst member's outcome, with every problem in `error`.
  ReleaseResult release() noexcept;

  /// Held by the calling thread on every member (RedLock: on a majority). Queries each server.
  bool is_held_by_current_thread() const;
  bool is_held_by_thread(std::int64_t owner) const;
  /// True when this process has been told that `owner`'s hold is lost: a member it took was
  /// found lost (its Client's lost-lock handler ran) and too few remain (any member; RedLock:
  /// fewer than a majority), and it has not been released since. A member taken again by a
  /// later acquisition (a re-entry after the loss) stays lost for the hold that lost it.
  /// Asks no server, so it answers while a server is silent; Guard<MultiLock>::lost() uses it.
  bool lost(std::int64_t owner) const;
  bool lost_by_current_thread() const;

  // --- Async forms: explicit owner id (see Client::new_owner_id()), Asio completion token.
  // Completions run on the token's executor, else on the first member's Client I/O thread. ---

  /// Completion: void(std::exception_ptr). Watchdog leases; waits without limit.
  template <class Token>
  auto async_lock(std::int64_t owner, Token&& token) {
    return async_lock(owner, Duration{0}, std::forward<Token>(token));
  }
  /// Completion: void(std::exception_ptr). lease <= 0: watchdog leases.
  ///
  /// Cancellable (both async acquires): a cancellation emitted on the handler's cancellation
  /// slot (asio::bind_cancellation_slot, `co_await (multi.async_lock(...) || timer...)`) before
  /// the lock is acquired cancels the member wait in progress (as the member's own async wait
  /// is cancelled), releases the members already taken and ends with CancelledError, leaving
  /// nothing behind (no hold, no queue entry; a member whose answer is still on its way is
  /// released when it arrives). A cancellation that comes once the walk has taken the members
  /// it needs changes nothing: the call completes as acquired, and the caller owns the hold.
  template <class Token>
  auto async_lock(std::int64_t owner, Duration lease, Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr)>(
        [self = *this, owner, lease](auto handler) {
          auto cancel = detail::connect_cancellation(handler, self.first_core());
          auto done = detail::wrap_handler<decltype(handler), asio::io_context::executor_type>(
              std::move(handler), self.io().get_executor());
          self.start_lock(owner, lease, std::move(done), std::move(cancel));
        },
        token);
  }
  /// Completion: void(std::exception_ptr, bool acquired). wait <= 0: one attempt per member;
  /// lease <= 0: watchdog leases. last_attempt() tells why it was not acquired. Cancellable
  /// as async_lock.
  template <class Token>
  auto async_try_lock(std::int64_t owner, Duration wait, Duration lease, Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr, bool)>(
        [self = *this, owner, wait, lease](auto handler) {
          auto cancel = detail::connect_cancellation(handler, self.first_core());
          auto done =
              detail::wrap_handler<decltype(handler), asio::io_context::executor_type, bool>(
                  std::move(handler), self.io().get_executor());
          self.start_try(
              owner, wait, lease,
              [done](std::exception_ptr e, AttemptReport r) { done(e, r.acquired); },
              std::move(cancel));
        },
        token);
  }
  /// Completion: void(std::exception_ptr) with the errors of unlock().
  template <class Token>
  auto async_unlock(std::int64_t owner, Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr)>(
        [self = *this, owner](auto handler) {
          auto done = detail::wrap_handler<decltype(handler), asio::io_context::executor_type>(
              std::move(handler), self.io().get_executor());
          self.start_unlock(owner, [done](ReleaseResult r, std::exception_ptr e) { done(e); });
        },
        token);
  }

 protected:
  MultiLock(std::vector<AnyLock> members, MultiLockOptions options, detail::MultiLockPolicy policy);

  template <class Rep, class Period>
  static Duration to_wait(const std::chrono::duration<Rep, Period>& d) {
    return detail::to_wait_ms(d);
  }

  using TryDone = std::function<void(std::exception_ptr, AttemptReport)>;
  using UnlockDone = std::function<void(ReleaseResult, std::exception_ptr)>;
  asio::io_context& io() const;
  /// The first member's Client (its I/O thread carries the async caller's cancellation).
  const std::shared_ptr<detail::ClientCore>& first_core() const;
  /// `cancel`: the async caller's cancellation (detail::connect_cancellation), if any.
  void start_try(std::int64_t owner, Duration wait, Duration lease, TryDone done,
                 std::shared_ptr<detail::CancelSignal> cancel = nullptr) const;
  void start_lock(std::int64_t owner, Duration lease, std::function<void(std::exception_ptr)> done,
                  std::shared_ptr<detail::CancelSignal> cancel = nullptr) const;
  void start_unlock(std::int64_t owner, UnlockDone done) const;

  std::shared_ptr<detail::MultiLockState> state_;

 private:
  /// Throws InvalidArgument for a lease out of range, or below kMinValidityLease with the
  /// validity check (RedLock).
  void check_lease(Duration lease) const;
  /// With the validity check: throws InvalidArgument when a member's lock_watchdog_timeout
  /// (the lease when none is given) is below kMinValidityLease.
  void check_watchdog_lease() const;
  /// The error of check_lease (lease > 0) or check_watchdog_lease (lease <= 0), or nullptr.
  std::exception_ptr lease_error(Duration lease) const;
};

}  // namespace redisync
