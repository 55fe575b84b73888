// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the benchmarks: the server URL and a request pump that keeps a fixed
// window of async requests in flight on one Client.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <exception>
#include <functional>
#include <semaphore>
#include <string>
#include <vector>

#include <asio/post.hpp>

#include "redisync/client.h"

namespace bench {

/// REDISYNC_BENCH_URL, or the local default server.
inline std::string server_url() {
  const char* url = std::getenv("REDISYNC_BENCH_URL");
  return url && *url ? url : "redis://127.0.0.1:6379";
}

inline std::string what(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

/// Issues `total` requests with at most `window` in flight: each completion (on the Client's
/// I/O thread) issues the next request, so the client never waits for a whole batch.
class Pump {
 public:
  using MakeArgs = std::function<std::vector<std::string>(std::size_t)>;

  Pump(redisync::Client& client, std::size_t window, MakeArgs make_args)
      : client_(client), window_(window), make_args_(std::move(make_args)) {}

  /// Blocks until `total` requests have completed. Returns false (see error()) if any failed.
  bool run(std::size_t total) {
    if (total == 0) return true;
    total_ = total;
    issued_ = completed_ = failed_ = 0;
    // All bookkeeping happens on the I/O thread; the semaphore publishes it back to us.
    asio::post(client_.io_context(), [this] {
      for (std::size_t i = 0; i < window_ && issued_ < total_; ++i) issue();
    });
    finished_.acquire();
    return failed_ == 0;
  }

  const std::string& error() const { return error_; }

 private:
  void issue() {
    client_.async_execute(make_args_(issued_++), [this](std::exception_ptr e, redisync::Reply) {
      if (e && failed_++ == 0) error_ = what(e);
      if (issued_ < total_) issue();
      if (++completed_ == total_) finished_.release();
    });
  }

  redisync::Client& client_;
  const std::size_t window_;
  MakeArgs make_args_;
  std::size_t total_ = 0, issued_ = 0, completed_ = 0, failed_ = 0;
  std::string error_;
  std::binary_semaphore finished_{0};
};

}  // namespace bench
