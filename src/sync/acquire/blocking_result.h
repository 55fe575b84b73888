// SPDX-License-Identifier: Apache-2.0
// Where a blocking call meets its I/O thread: the I/O thread completes it once, the calling
// thread waits for that and takes the value, or rethrows the error.
#pragma once

#include <atomic>
#include <exception>
#include <optional>
#include <utility>

#include "sync/trace_points.h"

namespace redisync::sync {

/// A copy of `error` for the calling thread alone (same dynamic type; redisync's own error
/// types, anything else is returned as it is).
///
/// Why: the I/O thread's chain of callbacks still holds the original in by-value parameters
/// until it unwinds, so it often drops the last reference after the caller has caught and read
/// the error. That is correct, as exception_ptr's count is atomic, but libstdc++ counts where
/// ThreadSanitizer cannot see, which then reports the free as a race with the caller's reads
/// (in any user's TSan build, not only ours). With its own copy, the caller's thread is the
/// only one that reads and frees the exception it catches.
std::exception_ptr copy_for_caller(std::exception_ptr error);

template <class T>
class BlockingResult {
 public:
  /// I/O side: the outcome, once (later calls are ignored).
  void complete(std::exception_ptr error, T value) {
    if (error) {
      fail(std::move(error));
    } else {
      succeed(std::move(value));
    }
  }
  void succeed(T value) {
    if (completed_) return;
    value_.emplace(std::move(value));
    publish();
  }
  void fail(std::exception_ptr error) {
    if (completed_) return;
    error_ = copy_for_caller(std::move(error));
    publish();
  }

  /// Set once the outcome is in (a caller may spin on it before take()).
  const std::atomic<bool>& ready() const { return ready_; }

  /// Caller side: waits for the outcome; returns the value or rethrows the error.
  T take() {
    ready_.wait(false, std::memory_order_acquire);
    REDISYNC_TRACE_POINT("taken");
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
    return std::move(*value_);
  }

 private:
  void publish() {
    REDISYNC_TRACE_POINT("ready");
    completed_ = true;
    ready_.store(true, std::memory_order_release);
    ready_.notify_all();
  }

  bool completed_ = false;  // I/O side only
  std::optional<T> value_;
  std::exception_ptr error_;
  std::atomic<bool> ready_{false};
};

}  // namespace redisync::sync
