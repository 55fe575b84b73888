// SPDX-License-Identifier: Apache-2.0
// The "I/O thread only" rule (docs/architecture.md, Threads): the state of a Client's
// connections, subscriber, watchdog and hold table is touched only by the thread running its
// io_context: its I/O thread, or a caller blocked in one of its calls (sync/loop_turns.h),
// never two at once. "I/O thread" in the library's comments means that thread.
#pragma once

#include <cassert>
#include <chrono>

#include <asio/basic_waitable_timer.hpp>
#include <asio/io_context.hpp>

namespace redisync::net {

/// What a blocking call made on the I/O thread it would wait for is told.
inline constexpr const char* kBlockingOnIoThread =
    "blocking call on the client's I/O thread; use the async form (the thread would wait for "
    "itself)";

/// True when the calling thread is running `io` (inside its run_one, poll or poll_one): the
/// I/O thread, or a blocked caller in its turn.
inline bool on_io_thread(asio::io_context& io) {
  return io.get_executor().running_in_this_thread();
}

/// A steady-clock timer bound to a Client's io_context. Its executor is the io_context's own
/// (8 bytes), where asio::steady_timer carries a type-erased executor (56 bytes) in the timer
/// and again in every wait it starts: used where there is one per waiter or per channel
/// (20,000 waiters, issue 34).
using WaitTimer = asio::basic_waitable_timer<std::chrono::steady_clock,
                                             asio::wait_traits<std::chrono::steady_clock>,
                                             asio::io_context::executor_type>;

/// Debug builds: stops at once when I/O-thread-only state is touched from another thread.
inline void assert_io_thread([[maybe_unused]] asio::io_context& io) {
  assert(on_io_thread(io));
}

}  // namespace redisync::net
