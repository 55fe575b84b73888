// SPDX-License-Identifier: Apache-2.0
// One thread that runs the calls given to it in order: a lock owner of the blocking API (its
// holds belong to this thread) that a test can drive step by step and wait for with a time
// limit, so a call that hangs is reported instead of hanging the test.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "redisync/client.h"

namespace redisync::test {

class ActorThread {
 public:
  ActorThread() : thread_([this] { loop(); }) {
    owner_ = run_for<std::int64_t>([] { return Client::current_thread_id(); },
                                   std::chrono::seconds(10))
                 .value_or(0);
  }
  ~ActorThread() { stop(); }
  ActorThread(const ActorThread&) = delete;
  ActorThread& operator=(const ActorThread&) = delete;

  /// The thread's owner id (Client::current_thread_id() there).
  std::int64_t owner() const { return owner_; }

  /// Runs `f` on the thread after what was given before; its result, or nullopt when it did
  /// not return within `limit` (it still runs; later calls wait behind it).
  template <class T>
  std::optional<T> run_for(std::function<T()> f, std::chrono::milliseconds limit) {
    auto task = std::make_shared<std::packaged_task<T()>>(std::move(f));
    auto result = task->get_future();
    {
      std::lock_guard g(mutex_);
      queue_.push_back([task] { (*task)(); });
    }
    cv_.notify_all();
    if (result.wait_for(limit) != std::future_status::ready) return std::nullopt;
    return result.get();
  }

  /// Finishes what was given (however long it takes) and joins the thread.
  void stop() {
    {
      std::lock_guard g(mutex_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    for (;;) {
      std::function<void()> next;
      {
        std::unique_lock g(mutex_);
        cv_.wait(g, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        next = std::move(queue_.front());
        queue_.pop_front();
      }
      next();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  std::int64_t owner_ = 0;
  std::thread thread_;  // last: starts once the members above exist
};

}  // namespace redisync::test
