// SPDX-License-Identifier: Apache-2.0
// redisync::RateLimiter: Redisson's RRateLimiter ("at most `rate` permits per `interval`").
// Layout and semantics: docs/wire-format.md §17.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <asio/io_context.hpp>

#include "redisync/export.h"
#include "redisync/async.h"
#include "redisync/config.h"

namespace redisync {

/// Who shares one limit (Redisson's RateType).
enum class RateType {
  overall = 0,     ///< every client of the fleet, Java and C++, draws on one window
  per_client = 1,  ///< each Client instance (each Client::id()) has a window of its own
};

/// A limiter's configuration as stored in its hash.
struct REDISYNC_API RateLimiterConfig {
  RateType type = RateType::overall;
  std::int64_t rate = 0;    ///< permits per window
  Duration interval{0};     ///< the window's length
  Duration keep_alive{0};   ///< 0: the limiter never expires (see try_set_rate)
};

namespace detail {
class ClientCore;
REDISYNC_API asio::io_context& io_of(const std::shared_ptr<ClientCore>& core);
/// Acquires `permits` on the I/O thread: wait < 0 (or a deadline past what the clock holds):
/// no limit; wait == 0: one attempt.
REDISYNC_API void start_rate_acquire(const std::shared_ptr<ClientCore>& core,
                                     const std::string& name, std::int64_t permits, Duration wait,
                                     std::function<void(std::exception_ptr, bool)> done,
                                     std::shared_ptr<CancelSignal> cancel = nullptr);
REDISYNC_API void start_rate_release(const std::shared_ptr<ClientCore>& core,
                                     const std::string& name, std::int64_t permits,
                                     std::function<void(std::exception_ptr)> done);
REDISYNC_API void start_rate_available(const std::shared_ptr<ClientCore>& core,
                                       const std::string& name,
                                       std::function<void(std::exception_ptr, std::int64_t)> done);
/// Throws InvalidArgument naming the limiter unless 1 <= permits <= RateLimiter::kMaxRate.
REDISYNC_API void check_rate_permits(std::int64_t permits, const std::string& name);
}  // namespace detail

/// A distributed rate limiter on Redis, compatible with Redisson's RRateLimiter: Java and C++
/// processes calling getRateLimiter(name) / rate_limiter(name) share one limit.
///
/// A sliding window: in any stretch of `interval`, at most `rate` permits are granted (to the
/// whole fleet with RateType::overall, to each Client with RateType::per_client). Each grant is
/// a member of a sorted set scored with its time; it returns its permits when it leaves the
/// window. Keys (docs/wire-format.md §17.1), with S(x) = "{name}:x" (or "name:x" when the name has a brace):
///   name                        hash: rate, interval, type (0/1), keepAliveTime
///   S(value), S(value):<id>     permits left in the window (overall / per client)
///   S(permits), S(permits):<id> the window's grants (overall / per client)
///
/// Time: a grant is scored with the **server's** clock (Redis TIME inside the script), not
/// this machine's as the spec (§17.3) and Redisson do. On a fleet with synchronised clocks,
/// which Redisson needs anyway, the two are the same wall clock, so Java and C++ share one
/// limit; among redisync clients, grants are then ordered exactly as the server runs them, and
/// no client's clock skew can let a window exceed the rate.
///
/// Waiting: acquire() and try_acquire_for() do not poll and do not use pub/sub. A refused
/// attempt answers how long until the oldest grant leaves the window; the caller sleeps
/// exactly that long (on the Client's I/O thread, no thread blocked for async callers) and
/// tries again. A timed wait gives up at once, returning false, when that time lies beyond its
/// deadline. A release() (or async_release()) that succeeds wakes the sleepers of the same
/// Client on the same limiter, which try again at once. A waiter in another Client or process
/// learns of a release only when its sleep ends, at the latest after the delay its attempt
/// was answered (at most the interval): Redisson publishes nothing for the limiter.
///
/// A lost reply: when an attempt's reply does not come (TimeoutError) or its connection drops
/// after it was sent (ConnectionError with maybe_sent()), the script may have granted the
/// permit, or may still run. The call then throws that error, its message saying the permit
/// may have been taken; it never answers "not acquired" for it. Count the permit as used.
///
/// Bad input, all thrown before anything is written:
///  - InvalidArgument: rate outside [1, kMaxRate]; interval outside [1 ms, kMaxDuration];
///    keep_alive outside [0, kMaxDuration]; permits outside [1, kMaxRate]; permits above the
///    configured rate (it could never be granted, so no wait is started);
///  - NotConfiguredError naming the limiter: acquire, release or available_permits before a
///    rate was set (or after remove(), or after the keep-alive ran out);
///  - ServerError naming the limiter: one of its keys holds another type (WRONGTYPE), or the
///    hash holds values that are not numbers.
///
/// Thread safety: a handle may be shared between threads. Copy/move: cheap to copy.
class REDISYNC_API RateLimiter {
 public:
  /// Largest rate and permit count: a grant records its permits as a 4-byte unsigned integer.
  static constexpr std::int64_t kMaxRate = 4294967295LL;
  /// Largest interval and keep-alive: the project's one limit for what is stored in Redis,
  /// redisync::max_duration (10^12 ms, about 31.7 years; Lua still computes `now - interval`
  /// exactly).
  static constexpr Duration kMaxDuration = max_duration;

  /// Throws InvalidArgument if the name is empty.
  RateLimiter(std::shared_ptr<detail::ClientCore> core, std::string name);

  const std::string& name() const { return name_; }

  /// Sets the configuration only if none exists (an existing one wins, whoever wrote it).
  /// True if this call set it. keep_alive > 0: the limiter's keys expire after that long
  /// without use (every acquire and release restarts the clock); 0: never.
  bool try_set_rate(RateType type, std::int64_t rate, Duration interval,
                    Duration keep_alive = Duration{0});
  /// Overwrites the configuration and restarts this client's window (the value and grants of
  /// `type` for this client are deleted; other clients' per-client windows are untouched).
  void set_rate(RateType type, std::int64_t rate, Duration interval,
                Duration keep_alive = Duration{0});
  /// The configuration, or nullopt when no rate is set.
  std::optional<RateLimiterConfig> config() const;

  /// One attempt, no waiting. Throws InvalidArgument if permits > rate.
  bool try_acquire(std::int64_t permits = 1);
  /// Waits up to `wait` for `permits` (taken at once). wait <= 0 is one attempt; a wait
  /// longer than max_duration (hours::max(), milliseconds::max()) has no limit.
  template <class Rep, class Period>
  bool try_acquire_for(std::int64_t permits, const std::chrono::duration<Rep, Period>& wait) {
    return try_acquire_wait(permits, detail::to_wait_ms(wait));
  }
  /// Blocks until `permits` are granted (taken at once).
  void acquire(std::int64_t permits = 1);
  /// Gives `permits` back to the current window (never above the rate). Grants are not
  /// owned: anybody may release, and a limiter need not be released at all (permits come back
  /// by themselves as grants leave the window).
  void release(std::int64_t permits = 1);
  /// Permits that could be granted now (the rate when the window is empty).
  std::int64_t available_permits() const;
  /// Deletes the configuration and this client's windows (both types). True if anything
  /// existed.
  bool remove();

  // --- Async forms: Asio completion tokens (callback, use_future, use_awaitable) ---
  //
  // The acquires are cancellable: a cancellation emitted on the handler's cancellation slot
  // (asio::bind_cancellation_slot, `co_await (limiter.async_acquire(...) || timer...)`) ends a
  // wait for the window with CancelledError, having taken nothing. An attempt already on its
  // way decides: one that was granted completes as acquired.

  /// Completion: void(std::exception_ptr, bool acquired). wait <= 0: one attempt; wait >
  /// max_duration: no limit.
  template <class Token>
  auto async_try_acquire(std::int64_t permits, Duration wait, Token&& token) {
    detail::check_rate_permits(permits, name_);
    return asio::async_initiate<Token, void(std::exception_ptr, bool)>(
        [core = core_, name = name_, permits, wait](auto handler) {
          auto cancel = detail::connect_cancellation(handler, core);
          detail::start_rate_acquire(
              core, name, permits, detail::clamp_wait(wait),
              detail::wrap_handler<decltype(handler), asio::io_context::executor_type, bool>(
                  std::move(handler), detail::io_of(core).get_executor()),
              std::move(cancel));
        },
        token);
  }
  /// Completion: void(std::exception_ptr). Waits without limit.
  template <class Token>
  auto async_acquire(std::int64_t permits, Token&& token) {
    detail::check_rate_permits(permits, name_);
    return asio::async_initiate<Token, void(std::exception_ptr)>(
        [core = core_, name = name_, permits](auto handler) {
          auto cancel = detail::connect_cancellation(handler, core);
          auto done = detail::wrap_handler<decltype(handler), asio::io_context::executor_type>(
              std::move(handler), detail::io_of(core).get_executor());
          detail::start_rate_acquire(core, name, permits, Duration{-1},
                                     [done](std::exception_ptr e, bool) { done(e); },
                                     std::move(cancel));
        },
        token);
  }
  /// Completion: void(std::exception_ptr).
  template <class Token>
  auto async_release(std::int64_t permits, Token&& token) {
    detail::check_rate_permits(permits, name_);
    return asio::async_initiate<Token, void(std::exception_ptr)>(
        [core = core_, name = name_, permits](auto handler) {
          detail::start_rate_release(
              core, name, permits,
              detail::wrap_handler<decltype(handler), asio::io_context::executor_type>(
                  std::move(handler), detail::io_of(core).get_executor()));
        },
        token);
  }
  /// Completion: void(std::exception_ptr, std::int64_t permits).
  template <class Token>
  auto async_available_permits(Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr, std::int64_t)>(
        [core = core_, name = name_](auto handler) {
          detail::start_rate_available(
              core, name,
              detail::wrap_handler<decltype(handler), asio::io_context::executor_type,
                                   std::int64_t>(std::move(handler),
                                                 detail::io_of(core).get_executor()));
        },
        token);
  }

 private:
  bool try_acquire_wait(std::int64_t permits, Duration wait);

  std::shared_ptr<detail::ClientCore> core_;
  std::string name_;
};

}  // namespace redisync
