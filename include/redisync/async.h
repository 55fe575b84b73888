// Glue between redisync's callback-based core and Asio completion tokens, so every async_*
// function works with callbacks, asio::use_future and asio::use_awaitable.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <utility>

#include <asio/associated_executor.hpp>
#include <asio/async_result.hpp>
#include <asio/dispatch.hpp>

namespace redisync::detail {

/// Wraps a (possibly move-only) Asio completion handler into a copyable std::function that
/// delivers the result on the handler's associated executor (default: the caller-given one).
template <class Handler, class Executor, class... Args>
std::function<void(std::exception_ptr, Args...)> wrap_handler(Handler&& handler,
                                                              const Executor& fallback) {
  using H = std::decay_t<Handler>;
  auto shared = std::make_shared<H>(std::forward<Handler>(handler));
  return [shared, fallback](std::exception_ptr error, Args... args) {
    auto ex = asio::get_associated_executor(*shared, fallback);
    asio::dispatch(ex, [shared, error, args...]() mutable {
      std::move (*shared)(error, std::move(args)...);
    });
  };
}

}  // namespace redisync::detail
