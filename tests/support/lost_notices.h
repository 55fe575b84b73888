// SPDX-License-Identifier: Apache-2.0
// Every lost-lock notice of a Client (Client::on_lock_lost), for the test thread to wait on.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <vector>

#include "redisync/client.h"

namespace redisync::test {

class LostNotices {
 public:
  /// Records the notices of `client` from now on (its handler runs on the I/O thread).
  void attach(Client& client) {
    client.on_lock_lost([this](const LockLostEvent& e) {
      std::lock_guard g(mutex_);
      events_.push_back(e);
      cv_.notify_all();
    });
  }
  /// Waits until `n` notices have come, at most `limit`; whether they came.
  bool wait_for(std::size_t n, std::chrono::milliseconds limit) {
    std::unique_lock g(mutex_);
    return cv_.wait_for(g, limit, [&] { return events_.size() >= n; });
  }
  /// The notices so far, in order.
  std::vector<LockLostEvent> all() {
    std::lock_guard g(mutex_);
    return events_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<LockLostEvent> events_;
};

}  // namespace redisync::test
