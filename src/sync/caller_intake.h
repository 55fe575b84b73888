// SPDX-License-Identifier: Apache-2.0
// Work that callers' threads hand to a Client's I/O thread (the start of every async call and
// of every blocking call), in the order it was handed over.
//
// Why not one asio::post per call: the io_context runs its handlers first in, first out, and
// its reactor (the replies read, the writes finished, the timers fired) is one entry in that
// same queue. A burst of 100,000 async_lock calls posted at once put the reactor behind all of
// them: no reply was read and no renewal sent until the last acquire of the burst was written,
// so the first holds' leases ran out while the client was still busy starting the others
// (issue 34). Here the burst waits in its own queue, and the I/O thread takes at most
// kPerTurn of it per turn of its loop: between two turns the reactor runs.
//
// Threading: push() from any thread; everything else on the I/O thread.
#pragma once

#include <asio/io_context.hpp>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>

namespace redisync::detail {

class CallerIntake {
 public:
  /// Calls started per turn of the I/O thread's loop: large enough that a turn's requests
  /// leave in one write, small enough that a turn stays well under a millisecond.
  static constexpr std::size_t kPerTurn = 64;

  explicit CallerIntake(asio::io_context& io) : io_(io) {}
  CallerIntake(const CallerIntake&) = delete;
  CallerIntake& operator=(const CallerIntake&) = delete;

  /// Queues `work` (callable once, with no arguments) to run on the I/O thread.
  template <class Work>
  void push(Work work) {
    auto item = std::make_unique<Item<Work>>(std::move(work));
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(item));
    if (!turn_posted_) {
      turn_posted_ = true;
      post_turn();
    }
  }

  /// Runs everything queued now, whatever its length (the close: every call admitted before
  /// it runs ahead of the close's own work). I/O thread only.
  void run_all();

 private:
  struct Work {
    virtual ~Work() = default;
    virtual void run() = 0;
  };
  template <class F>
  struct Item final : Work {
    explicit Item(F work) : f(std::move(work)) {}
    void run() override { f(); }
    F f;
  };

  void post_turn();  // mutex_ held
  void run_turn();
  std::unique_ptr<Work> take();

  asio::io_context& io_;
  std::mutex mutex_;
  std::deque<std::unique_ptr<Work>> queue_;
  bool turn_posted_ = false;  // a run_turn is queued on the io_context
};

}  // namespace redisync::detail
