// SPDX-License-Identifier: Apache-2.0
// The async API with C++20 coroutines (asio::use_awaitable). Async calls name their owner
// explicitly: a coroutine may resume on another thread.
//
//   example_coroutine [redis://127.0.0.1:6379]
#include <redisync/redisync.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/use_awaitable.hpp>
#include <chrono>
#include <exception>
#include <iostream>
#include <string>

using namespace std::chrono_literals;

// [coroutine]
asio::awaitable<int> update_report(redisync::Client& client) {
  auto lock = client.lock("example:report");
  const std::int64_t owner = redisync::Client::new_owner_id();
  // Wait up to 5 s; a 30 s lease (no watchdog).
  const bool acquired = co_await lock.async_try_lock(owner, 5s, 30s, asio::use_awaitable);
  if (!acquired) co_return 0;
  // ... the protected work, co_awaiting other I/O as needed ...
  co_await lock.async_unlock(owner, asio::use_awaitable);
  co_return 1;
}
// [end]

int main(int argc, char** argv) {
  const std::string url = argc > 1 ? argv[1] : "redis://127.0.0.1:6379";
  try {
    asio::io_context io;  // declared first: the Client (and its I/O thread, which posts the
                          // completions to `io`) is destroyed before it
    redisync::Client client(url);
    int updated = -1;
    std::exception_ptr failure;
    asio::co_spawn(io, update_report(client), [&](std::exception_ptr e, int n) {
      failure = e;
      updated = n;
    });
    io.run();
    if (failure) std::rethrow_exception(failure);
    std::cout << "updated " << updated << " report(s)\n";
    return updated == 1 ? 0 : 1;
  } catch (const redisync::Error& e) {
    std::cerr << "example_coroutine: " << e.what() << "\n";
    return 1;
  }
}
