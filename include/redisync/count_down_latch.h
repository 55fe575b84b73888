// SPDX-License-Identifier: Apache-2.0
// redisync::CountDownLatch: Redisson's RCountDownLatch. Layout and semantics: docs/wire-format.md §9.
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
/// Starts a wait for the count to reach 0 on the I/O thread; `done(error, opened)`.
/// wait < 0: no limit; wait == 0: one check.
REDISYNC_API void start_latch_wait(const std::shared_ptr<ClientCore>& core, const std::string& name,
                                   Duration wait,
                                   std::function<void(std::exception_ptr, bool)> done,
                                   std::shared_ptr<CancelSignal> cancel = nullptr);
}  // namespace detail

/// A distributed count-down latch on Redis, compatible with Redisson's RCountDownLatch: Java
/// and C++ processes count down and wait on the same latch.
///
/// Shaped like std::latch (count_down, wait, try_wait) plus Redisson's extras. The count is a
/// plain Redis string `name`; an absent key means 0 (open). Unlike std::latch it can be reused:
/// once the count reached 0 the key is gone and try_set_count() may start a new round.
///
/// Waiting is push-based: waiters subscribe to "redisson_countdownlatch__channel__{name}" (the
/// braces are always added, as Redisson does) and re-check the count after every message (the
/// last count_down publishes "0"; remove() publishes "1", which here also re-checks so that
/// waiters return when the latch is deleted); they never poll.
///
/// Thread safety: a handle may be shared between threads. Copy/move: cheap to copy.
class REDISYNC_API CountDownLatch {
 public:
  /// Throws InvalidArgument if the name is empty.
  CountDownLatch(std::shared_ptr<detail::ClientCore> core, std::string name);

  const std::string& name() const { return name_; }

  /// Decrements the count by `n` (>= 0; 0 does nothing). When the count reaches 0 (or
  /// below) the latch opens: the key is deleted and every waiter is woken. Counting down an
  /// open latch does nothing. Applied once even if its reply is lost (resent with a record,
  /// like Semaphore::release; an error after the resend window says it may have run).
  void count_down(std::int64_t n = 1);
  /// Blocks until the count is 0.
  void wait();
  /// True if the count is 0 (one read, no waiting).
  bool try_wait() const;
  /// Waits up to `wait` for the count to reach 0; false on timeout (the count is unchanged).
  template <class Rep, class Period>
  bool wait_for(const std::chrono::duration<Rep, Period>& wait) {
    return wait_ms(detail::to_wait_ms(wait));
  }
  /// Waits until `deadline` (any clock).
  template <class Clock, class Dur>
  bool wait_until(const std::chrono::time_point<Clock, Dur>& deadline) {
    return wait_for(deadline - Clock::now());
  }
  /// Sets the count to `count` (>= 1) only if the latch is open (key absent). True if set.
  bool try_set_count(std::int64_t count);
  /// The current count (0 when open).
  std::int64_t count() const;
  /// Deletes the latch (it opens; waiters return). True if it existed.
  bool remove();

  // --- Async forms: Asio completion tokens (callback, use_future, use_awaitable) ---
  //
  // The waits are cancellable: a cancellation emitted on the handler's cancellation slot
  // (asio::bind_cancellation_slot, `co_await (latch.async_wait(...) || timer...)`) ends the
  // wait with CancelledError and leaves its subscription.

  /// Completion: void(std::exception_ptr). Waits without limit.
  template <class Token>
  auto async_wait(Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr)>(
        [core = core_, name = name_](auto handler) {
          auto cancel = detail::connect_cancellation(handler, core);
          auto done = detail::wrap_handler<decltype(handler), asio::io_context::executor_type>(
              std::move(handler), detail::io_of(core).get_executor());
          detail::start_latch_wait(core, name, Duration{-1},
                                   [done](std::exception_ptr e, bool) { done(e); },
                                   std::move(cancel));
        },
        token);
  }
  /// Completion: void(std::exception_ptr, bool opened); false when `wait` ran out.
  template <class Token>
  auto async_wait_for(Duration wait, Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr, bool)>(
        [core = core_, name = name_, wait](auto handler) {
          auto cancel = detail::connect_cancellation(handler, core);
          detail::start_latch_wait(
              core, name, detail::clamp_wait(wait),
              detail::wrap_handler<decltype(handler), asio::io_context::executor_type, bool>(
                  std::move(handler), detail::io_of(core).get_executor()),
              std::move(cancel));
        },
        token);
  }

 private:
  bool wait_ms(Duration wait);

  std::shared_ptr<detail::ClientCore> core_;
  std::string name_;
};

}  // namespace redisync
