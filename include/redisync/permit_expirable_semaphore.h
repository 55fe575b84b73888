// SPDX-License-Identifier: Apache-2.0
// redisync::PermitExpirableSemaphore: Redisson's RPermitExpirableSemaphore (4.x layout).
// Layout and semantics: docs/wire-format.md §8, waiting §13.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <asio/io_context.hpp>

#include "redisync/export.h"
#include "redisync/async.h"
#include "redisync/config.h"
#include "redisync/errors.h"

namespace redisync {

/// A permit id that is not held: never issued, already released, or its lease ran out (its
/// permit went back to the semaphore). Code errc::unknown_permit.
class REDISYNC_API UnknownPermitError : public Error {
 public:
  explicit UnknownPermitError(const std::string& what) : Error(errc::unknown_permit, what) {}
};

namespace detail {
class ClientCore;
REDISYNC_API asio::io_context& io_of(const std::shared_ptr<ClientCore>& core);
/// Starts an acquisition of `permits` (>= 1) with `lease` (> 0, or no_expiry) on
/// the I/O thread; `done(error, ids)` with the hex ids, empty when not acquired in time.
/// wait < 0: no limit; wait == 0: one attempt.
REDISYNC_API void start_permit_acquire(
    const std::shared_ptr<ClientCore>& core, const std::string& name, std::int64_t permits,
    Duration lease, Duration wait,
    std::function<void(std::exception_ptr, std::vector<std::string>)> done,
    std::shared_ptr<CancelSignal> cancel = nullptr);
/// Releases one permit by hex id; UnknownPermitError when it is not held. Throws
/// InvalidArgument at once for a malformed id.
REDISYNC_API void start_permit_release(const std::shared_ptr<ClientCore>& core,
                                       const std::string& name, const std::string& id,
                                       std::function<void(std::exception_ptr)> done);
/// Validation shared by the blocking and async forms (throws InvalidArgument).
REDISYNC_API void check_permit_args(const std::string& name, std::int64_t permits, Duration lease);
}  // namespace detail

/// A counting semaphore whose permits carry ids and expire, compatible with Redisson's
/// RPermitExpirableSemaphore (4.x: ids stored as 16 raw bytes): a Java service using
/// getPermitExpirableSemaphore(name) on the same server shares its permits.
///
/// Each acquired permit has an id (32 lowercase hex chars) and a lease; only that id releases
/// it. When a lease runs out (e.g. the holder crashed) the permit goes back to the semaphore
/// by itself: every operation first reclaims expired permits. A waiter blocked while the
/// permits are held by leases sleeps at most until the earliest lease ends, then its retry
/// reclaims that permit: no polling, and no message is needed.
///
/// Redis layout: available count in string `name`, held ids in sorted set `{name}:timeout`
/// (score = expiry as Unix epoch ms, or 922337203685477 for no expiry), notifications on
/// "redisson_sc:{name}". redisync's scripts count expiry on the server's clock (TIME), so a
/// redisync client's own clock does not matter; Java clients score with their own clocks, as
/// Redisson does.
///
/// A blocking acquisition carries a request record (`redisync_permit_request:{name}:<id>`,
/// expiring like a release record): after a lost reply it is either found (acquired) or set
/// to "0", so a late copy of the attempt takes nothing and leaves no id nobody knows of.
///
/// Leases: a Duration > 0, or PermitExpirableSemaphore::no_expiry (the permit is held until
/// released). A permit with a lease has a local deadline (the acquire's send time + lease -
/// a tenth of the lease; update_lease moves it): when it passes before the release, the
/// lost-lock handler (Client::on_lock_lost) is told, with LockLostEvent::permit_id the id
/// (docs/safety.md, "The lost notice"). Fairness within one Client as for Semaphore (see there): a waiter for n
/// permits holds back later local waiters for fewer.
///
/// Errors: InvalidArgument for bad input (permits < 1 to acquire, lease <= 0, malformed ids,
/// negative counts where a count is set, counts beyond kMaxCount), UnknownPermitError for ids
/// that are not held.
///
/// Thread safety: a handle may be shared between threads. Copy/move: cheap to copy.
class REDISYNC_API PermitExpirableSemaphore {
 public:
  /// The lease meaning "held until released" (stored with score 922337203685477).
  static constexpr Duration no_expiry = Duration::max();
  /// The largest count the semaphore keeps, available or in total (available + held): its
  /// scripts hold a count of at most 15 decimal digits. A count set or added beyond it
  /// (set_permits, try_set_permits, add_permits), or one that would leave the available count
  /// or the total beyond +-kMaxCount, is refused with InvalidArgument naming the value and the
  /// limit, before anything is written.
  static constexpr std::int64_t kMaxCount = 999'999'999'999'999;
  /// The most permits one acquire call takes (each gets an id, built before the call); more
  /// is refused with InvalidArgument.
  static constexpr std::int64_t kMaxPermitsPerAcquire = 100000;
  static_assert(kMaxPermitsPerAcquire <= kMaxCount);

  /// Throws InvalidArgument if the name is empty.
  PermitExpirableSemaphore(std::shared_ptr<detail::ClientCore> core, std::string name);

  const std::string& name() const { return name_; }

  /// Blocks until a permit is acquired; returns its id. No expiry.
  std::string acquire() { return acquire(no_expiry); }
  /// Blocks until a permit is acquired; it expires after `lease`.
  std::string acquire(Duration lease);
  /// Blocks until `permits` (>= 1) permits are acquired at once; returns their ids.
  std::vector<std::string> acquire(std::int64_t permits, Duration lease);
  /// One attempt, no waiting (no expiry).
  std::optional<std::string> try_acquire() { return try_acquire_for(Duration{0}, no_expiry); }
  /// Waits up to `wait` (no expiry).
  std::optional<std::string> try_acquire_for(Duration wait) {
    return try_acquire_for(wait, no_expiry);
  }
  /// Waits up to `wait`; the permit expires after `lease`.
  std::optional<std::string> try_acquire_for(Duration wait, Duration lease);
  /// Waits up to `wait` for `permits` permits at once; empty if not acquired.
  std::vector<std::string> try_acquire_for(std::int64_t permits, Duration wait, Duration lease);

  /// Releases a permit. Throws UnknownPermitError if `id` is not held (never issued, already
  /// released, or expired; "was lost" when its lease ran out and the lost-lock handler was
  /// told), InvalidArgument if it is not 32 hex digits.
  void release(const std::string& id);
  /// As release(), but false instead of UnknownPermitError.
  bool try_release(const std::string& id);
  /// Releases all of `ids` or none: UnknownPermitError (naming the first bad id) and no change
  /// if any is not held. Duplicate ids: InvalidArgument. An empty list does nothing.
  void release(const std::vector<std::string>& ids);

  /// Gives a held permit a new lease counted from now (or no_expiry). False if not held.
  bool update_lease(const std::string& id, Duration lease);
  /// Remaining lease of a held permit; Duration(-1) when it has no expiry. Throws
  /// UnknownPermitError if it is not held.
  Duration remaining_lease(const std::string& id);

  /// Available permits (after reclaiming expired ones; may be negative).
  std::int64_t available_permits() const;
  /// Sets the available count to `permits` (0..kMaxCount) only if the semaphore does not
  /// exist yet.
  bool try_set_permits(std::int64_t permits);
  /// Makes the total (available + held) equal `permits` (0..kMaxCount): the available count
  /// moves by the difference and may go negative while more permits are held than the new
  /// total.
  void set_permits(std::int64_t permits);
  /// Adds `permits`, any sign (the available count may go negative); the available count and
  /// the total stay within +-kMaxCount.
  void add_permits(std::int64_t permits);

  // --- Async forms: Asio completion tokens (callback, use_future, use_awaitable) ---
  //
  // The acquires are cancellable: a cancellation emitted on the handler's cancellation slot
  // (asio::bind_cancellation_slot, `co_await (sem.async_acquire(...) || timer...)`) before the
  // permits are taken ends the wait with CancelledError, having taken nothing (a waiter held
  // back behind a bigger one of the same Client gives up at once, without a server call). An
  // attempt already on its way decides: one that took the permits completes as acquired.

  /// Completion: void(std::exception_ptr, std::vector<std::string> ids). Waits without limit.
  template <class Token>
  auto async_acquire(std::int64_t permits, Duration lease, Token&& token) {
    detail::check_permit_args(name_, permits, lease);
    return asio::async_initiate<Token, void(std::exception_ptr, std::vector<std::string>)>(
        [core = core_, name = name_, permits, lease](auto handler) {
          auto cancel = detail::connect_cancellation(handler, core);
          detail::start_permit_acquire(
              core, name, permits, lease, Duration{-1},
              detail::wrap_handler<decltype(handler), asio::io_context::executor_type,
                                   std::vector<std::string>>(
                  std::move(handler), detail::io_of(core).get_executor()),
              std::move(cancel));
        },
        token);
  }
  /// Completion: void(std::exception_ptr, std::vector<std::string> ids), ids empty when not
  /// acquired within `wait` (<= 0: one attempt).
  template <class Token>
  auto async_try_acquire(std::int64_t permits, Duration wait, Duration lease, Token&& token) {
    detail::check_permit_args(name_, permits, lease);
    return asio::async_initiate<Token, void(std::exception_ptr, std::vector<std::string>)>(
        [core = core_, name = name_, permits, wait, lease](auto handler) {
          auto cancel = detail::connect_cancellation(handler, core);
          detail::start_permit_acquire(
              core, name, permits, lease, detail::clamp_wait(wait),
              detail::wrap_handler<decltype(handler), asio::io_context::executor_type,
                                   std::vector<std::string>>(
                  std::move(handler), detail::io_of(core).get_executor()),
              std::move(cancel));
        },
        token);
  }
  /// Completion: void(std::exception_ptr), UnknownPermitError as release(). A malformed id
  /// throws InvalidArgument from the initiation.
  template <class Token>
  auto async_release(const std::string& id, Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr)>(
        [core = core_, name = name_, id](auto handler) {
          detail::start_permit_release(
              core, name, id,
              detail::wrap_handler<decltype(handler), asio::io_context::executor_type>(
                  std::move(handler), detail::io_of(core).get_executor()));
        },
        token);
  }

 private:
  std::shared_ptr<detail::ClientCore> core_;
  std::string name_;
};

}  // namespace redisync
