// SPDX-License-Identifier: Apache-2.0
// Where exceptions thrown by async completion handlers on an I/O thread go (redisync/async.h).
#include <exception>
#include <functional>
#include <mutex>
#include <string>

#include "log_line.h"
#include "redisync/async.h"

namespace redisync {

namespace {

std::mutex hook_mutex;
std::function<void(std::exception_ptr)> hook;  // empty: the default (a line for Config::log)

}  // namespace

void set_async_handler_exception_hook(std::function<void(std::exception_ptr)> h) {
  std::lock_guard lock(hook_mutex);
  hook = std::move(h);
}

namespace detail {

void report_handler_exception(std::exception_ptr error) noexcept {
  std::function<void(std::exception_ptr)> h;
  {
    std::lock_guard lock(hook_mutex);
    h = hook;
  }
  try {
    if (h) return h(error);
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      log_line_on_this_thread(std::string("an async completion handler threw (ignored): ") +
                              e.what());
    } catch (...) {
      log_line_on_this_thread("an async completion handler threw a non-std exception (ignored)");
    }
  } catch (...) {
    // The hook itself threw: dropped, the I/O thread goes on.
  }
}

}  // namespace detail
}  // namespace redisync
