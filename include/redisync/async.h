// SPDX-License-Identifier: Apache-2.0
// Glue between redisync's callback-based core and Asio completion tokens, so every async_*
// function works with callbacks, asio::use_future and asio::use_awaitable.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

#include <asio/associated_cancellation_slot.hpp>
#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/cancellation_type.hpp>
#include <asio/dispatch.hpp>

#include "redisync/export.h"

namespace redisync {

/// Exceptions thrown by async completion handlers (issue 22).
///
/// A handler that runs on a Client's loop (the default: the handler has no associated
/// executor of its own; the loop runs on the Client's I/O thread or on a thread blocked in one
/// of its calls, see Client) must not throw. If one does, the exception is caught there, the
/// loop keeps running (every other call and lease renewal of the Client goes on), and it is
/// handed to this hook; without one, it is a line for that Client's Config::log (stderr when
/// none is set). The hook runs on the loop: keep it short; an exception it throws is dropped.
/// Process-wide; thread-safe.
///
/// A handler bound to an executor of your own (asio::bind_executor, a strand, a coroutine on
/// your io_context) follows Asio's convention instead: its exception propagates out of that
/// executor's run().
REDISYNC_API void set_async_handler_exception_hook(std::function<void(std::exception_ptr)> hook);

namespace detail {

class ClientCore;
class CancelSignal;

/// A cancellation channel for one async wait of `core`'s Client (src/sync/acquire/cancel_signal.h).
REDISYNC_API std::shared_ptr<CancelSignal> make_cancel_signal(
    const std::shared_ptr<ClientCore>& core);
/// Asks the wait of `signal` to give up; any thread, never throws, nothing once it ended.
REDISYNC_API void request_cancel(const std::shared_ptr<CancelSignal>& signal) noexcept;

/// Per-operation cancellation (Asio's cancellation slots): when `handler` has a connected
/// cancellation slot (asio::bind_cancellation_slot, the awaitable operators, a parallel
/// group), a terminal, partial or total cancellation emitted on it asks the wait to give up.
/// All three are honoured: a wait that gives up leaves nothing behind. Returns the signal to
/// hand to the wait, or nullptr when the handler cannot be cancelled.
template <class Handler>
std::shared_ptr<CancelSignal> connect_cancellation(Handler& handler,
                                                   const std::shared_ptr<ClientCore>& core) {
  auto slot = asio::get_associated_cancellation_slot(handler);
  if (!slot.is_connected()) return nullptr;
  auto signal = make_cancel_signal(core);
  slot.assign([signal](asio::cancellation_type type) {
    constexpr auto honoured = asio::cancellation_type::terminal |
                              asio::cancellation_type::partial | asio::cancellation_type::total;
    if ((type & honoured) != asio::cancellation_type::none) request_cancel(signal);
  });
  return signal;
}

/// Passes an exception that escaped a handler on an I/O thread to the hook (never throws).
REDISYNC_API void report_handler_exception(std::exception_ptr error) noexcept;

/// True while this thread completes an async call of a closed Client (ClientCore::fail_later).
REDISYNC_API bool delivering_closed_completion() noexcept;

/// Wraps a (possibly move-only) Asio completion handler into a copyable std::function that
/// delivers the result on the handler's associated executor (default: the caller-given one).
template <class Handler, class Executor, class... Args>
std::function<void(std::exception_ptr, Args...)> wrap_handler(Handler&& handler,
                                                              const Executor& fallback) {
  using H = std::decay_t<Handler>;
  auto shared = std::make_shared<H>(std::forward<Handler>(handler));
  return [shared, fallback](std::exception_ptr error, Args... args) {
    auto ex = asio::get_associated_executor(*shared, fallback);
    // A closed Client's completion (ClientCore::fail_later, on another thread): the Client's
    // state, `fallback`'s io_context with it, may be gone by now (its last handle dropped), so
    // `fallback` is compared but never used. A handler bound to its I/O thread runs here.
    const bool closed = delivering_closed_completion();
    // The Client is closed: its I/O thread is gone and nothing posted to it runs any more (a
    // handle that outlived its Client, used for an async call). The handler runs here
    // instead, or it would never run: a callback never called, a future never ready, a
    // coroutine never resumed. (On the I/O thread itself, dispatch below still runs it
    // inline and keeps an exception it throws off the thread.)
    if constexpr (std::is_same_v<decltype(ex), Executor>) {
      if (ex == fallback &&
          (closed || (!fallback.running_in_this_thread() && fallback.context().stopped()))) {
        return std::move (*shared)(error, std::move(args)...);
      }
    }
    asio::dispatch(ex, [shared, fallback, closed, error, args...]() mutable {
      if (closed || !fallback.running_in_this_thread()) {
        return std::move (*shared)(error, std::move(args)...);
      }
      // On the I/O thread (dispatch may run it inside the library's own callbacks): an
      // exception must not unwind through them nor end the thread.
      try {
        std::move (*shared)(error, std::move(args)...);
      } catch (...) {
        report_handler_exception(std::current_exception());
      }
    });
  };
}

}  // namespace detail
}  // namespace redisync
