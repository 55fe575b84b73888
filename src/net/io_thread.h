// SPDX-License-Identifier: Apache-2.0
// The "I/O thread only" rule (docs/architecture.md, Threads): the state of a Client's
// connections, subscriber, watchdog and hold table is touched by its I/O thread alone.
#pragma once

#include <cassert>

#include <asio/io_context.hpp>

namespace redisync::net {

/// What a blocking call made on the I/O thread it would wait for is told.
inline constexpr const char* kBlockingOnIoThread =
    "blocking call on the client's I/O thread; use the async form (the thread would wait for "
    "itself)";

/// True when the calling thread is running `io` (inside its run, run_one or poll).
inline bool on_io_thread(asio::io_context& io) {
  return io.get_executor().running_in_this_thread();
}

/// Debug builds: stops at once when I/O-thread-only state is touched from another thread.
inline void assert_io_thread([[maybe_unused]] asio::io_context& io) {
  assert(on_io_thread(io));
}

}  // namespace redisync::net
