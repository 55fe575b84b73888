// SPDX-License-Identifier: Apache-2.0
// redisync::Semaphore: Redisson's RSemaphore (counting semaphore). Layout and semantics: wire
// docs/wire-format.md §7, waiting §13.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>

#include <asio/io_context.hpp>

#include "redisync/export.h"
#include "redisync/async.h"
#include "redisync/config.h"

namespace redisync {

namespace detail {
class ClientCore;
REDISYNC_API asio::io_context& io_of(const std::shared_ptr<ClientCore>& core);
/// Starts an acquisition of `permits` (>= 0) on the I/O thread; `done(error, acquired)`.
/// wait < 0: no limit; wait == 0: one attempt.
REDISYNC_API void start_semaphore_acquire(const std::shared_ptr<ClientCore>& core,
                                          const std::string& name, std::int64_t permits,
                                          Duration wait,
                                          std::function<void(std::exception_ptr, bool)> done,
                                          std::shared_ptr<CancelSignal> cancel = nullptr);
/// Releases `permits` (>= 0; 0 completes at once without a server call).
REDISYNC_API void start_semaphore_release(const std::shared_ptr<ClientCore>& core,
                                          const std::string& name, std::int64_t permits,
                                          std::function<void(std::exception_ptr)> done);
/// Throws InvalidArgument naming `what` when `permits` is outside [0, kMaxPermits].
REDISYNC_API void check_permits(std::int64_t permits, const char* what, const std::string& name);
}  // namespace detail

/// The largest permit count (and number of permits per call) the semaphores accept: 2^53 - 1,
/// the largest integer the server's Lua scripts (IEEE doubles) compare exactly. Larger values
/// are refused with InvalidArgument before anything is written (issue 22).
inline constexpr std::int64_t kMaxPermits = (std::int64_t{1} << 53) - 1;

/// A distributed counting semaphore on Redis, compatible with Redisson's RSemaphore: a Java
/// service using getSemaphore(name) on the same server shares its permits, and each side's
/// release wakes the other's waiters.
///
/// Shaped like std::counting_semaphore (acquire, try_acquire, try_acquire_for,
/// try_acquire_until, release), with counts and Redisson's extras. The permit count is a plain
/// Redis string `name`; it does not exist until set (try_set_permits, add_permits or a
/// release), and an absent count means 0 permits. There is no ownership: anybody may release,
/// and nothing is given back automatically when a process dies (see PermitExpirableSemaphore
/// for that).
///
/// Waiting is push-based: a waiter subscribes to "redisson_sc:{name}" and sleeps until a
/// release announces permits (a message with the new count v wakes up to v local waiters),
/// then retries; it never polls.
///
/// Fairness (what is guaranteed): within one Client, a waiter for n permits is never starved
/// by later waiters of the same semaphore for fewer permits: while it waits, every later
/// acquisition for fewer than n is held back (it does not even try) until the waiter has its
/// permits or gives up. That includes zero-wait try_acquire calls, which then fail at once
/// without a server call (no barging past a bigger waiter). Acquisitions for the same count
/// (e.g. many threads calling acquire()) run side by side and are woken in FIFO order, so the
/// push handoff is not serialised. Across Clients and processes there is no ordering: a
/// waiter for many permits can be starved by other processes that keep taking fewer (as with
/// Redisson, whose semaphore is not fair either).
///
/// Counts: negative counts throw InvalidArgument naming the argument; acquiring 0 permits
/// succeeds without a server call; releasing 0 does nothing.
///
/// Thread safety: a handle may be shared between threads. Copy/move: cheap to copy.
class REDISYNC_API Semaphore {
 public:
  /// Throws InvalidArgument if the name is empty.
  Semaphore(std::shared_ptr<detail::ClientCore> core, std::string name);

  const std::string& name() const { return name_; }

  /// Blocks until one permit is taken.
  void acquire() { acquire(1); }
  /// Blocks until `permits` permits are taken at once (all or nothing).
  void acquire(std::int64_t permits);
  /// One attempt, no waiting.
  bool try_acquire() { return try_acquire(1); }
  bool try_acquire(std::int64_t permits);
  /// Waits up to `wait` for one permit. wait <= 0 is one attempt.
  template <class Rep, class Period>
  bool try_acquire_for(const std::chrono::duration<Rep, Period>& wait) {
    return try_acquire_for(1, wait);
  }
  /// Waits up to `wait` for `permits` permits (taken at once).
  template <class Rep, class Period>
  bool try_acquire_for(std::int64_t permits, const std::chrono::duration<Rep, Period>& wait) {
    return try_acquire_wait(permits, to_wait(wait));
  }
  /// Waits until `deadline` (any clock; converted to a wait from now).
  template <class Clock, class Dur>
  bool try_acquire_until(const std::chrono::time_point<Clock, Dur>& deadline) {
    return try_acquire_for(1, deadline - Clock::now());
  }
  template <class Clock, class Dur>
  bool try_acquire_until(std::int64_t permits,
                         const std::chrono::time_point<Clock, Dur>& deadline) {
    return try_acquire_for(permits, deadline - Clock::now());
  }
  /// Gives back one permit (creating the count if absent) and wakes waiters.
  void release() { release(1); }
  /// Gives back `permits`. A release whose reply is lost is resent with the same release
  /// record, so it applies once; if no reply comes within the resend window it throws
  /// TimeoutError / ConnectionError saying the release may have run (do not simply repeat it).
  void release(std::int64_t permits);
  /// Gives back `permits` only if the count exists; false (no change) if it does not.
  bool release_if_exists(std::int64_t permits);

  /// Sets the count to `permits` (>= 0) only if it does not exist yet. True if set.
  bool try_set_permits(std::int64_t permits);
  /// As try_set_permits, and the count key expires after `ttl` (> 0).
  bool try_set_permits(std::int64_t permits, Duration ttl);
  /// Adds `permits`, any sign: the count may go negative, and acquirers then wait until
  /// enough permits are added or released to bring it back to what they need.
  void add_permits(std::int64_t permits);
  /// The current count (0 if absent; may be negative).
  std::int64_t available_permits() const;
  /// Takes every available permit: returns the previous count and sets it to 0. Returns 0
  /// (and creates nothing) if absent; a negative count is returned as is and reset to 0.
  std::int64_t drain_permits();
  /// Deletes the count (the semaphore then has 0 permits and may be set again). True if it
  /// existed.
  bool remove();

  // --- Async forms: Asio completion tokens (callback, use_future, use_awaitable) ---
  //
  // The acquires are cancellable: a cancellation emitted on the handler's cancellation slot
  // (asio::bind_cancellation_slot, `co_await (sem.async_acquire(...) || timer...)`) before the
  // permits are taken ends the wait with CancelledError, having taken nothing (a waiter held
  // back behind a bigger one of the same Client gives up at once, without a server call). An
  // attempt already on its way decides: one that took the permits completes as acquired.

  /// Completion: void(std::exception_ptr). Waits without limit.
  template <class Token>
  auto async_acquire(std::int64_t permits, Token&& token) {
    detail::check_permits(permits, "permits", name_);
    return asio::async_initiate<Token, void(std::exception_ptr)>(
        [core = core_, name = name_, permits](auto handler) {
          auto cancel = detail::connect_cancellation(handler, core);
          auto done = detail::wrap_handler<decltype(handler), asio::io_context::executor_type>(
              std::move(handler), detail::io_of(core).get_executor());
          detail::start_semaphore_acquire(core, name, permits, Duration{-1},
                                          [done](std::exception_ptr e, bool) { done(e); },
                                          std::move(cancel));
        },
        token);
  }
  /// Completion: void(std::exception_ptr, bool acquired). wait <= 0: one attempt.
  template <class Token>
  auto async_try_acquire(std::int64_t permits, Duration wait, Token&& token) {
    detail::check_permits(permits, "permits", name_);
    return asio::async_initiate<Token, void(std::exception_ptr, bool)>(
        [core = core_, name = name_, permits, wait](auto handler) {
          auto cancel = detail::connect_cancellation(handler, core);
          detail::start_semaphore_acquire(
              core, name, permits, detail::clamp_wait(wait),
              detail::wrap_handler<decltype(handler), asio::io_context::executor_type, bool>(
                  std::move(handler), detail::io_of(core).get_executor()),
              std::move(cancel));
        },
        token);
  }
  /// Completion: void(std::exception_ptr).
  template <class Token>
  auto async_release(std::int64_t permits, Token&& token) {
    detail::check_permits(permits, "permits", name_);
    return asio::async_initiate<Token, void(std::exception_ptr)>(
        [core = core_, name = name_, permits](auto handler) {
          detail::start_semaphore_release(
              core, name, permits,
              detail::wrap_handler<decltype(handler), asio::io_context::executor_type>(
                  std::move(handler), detail::io_of(core).get_executor()));
        },
        token);
  }

 private:
  template <class Rep, class Period>
  static Duration to_wait(const std::chrono::duration<Rep, Period>& d) {
    return detail::to_wait_ms(d);
  }
  bool try_acquire_wait(std::int64_t permits, Duration wait);

  std::shared_ptr<detail::ClientCore> core_;
  std::string name_;
};

}  // namespace redisync
