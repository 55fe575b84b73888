// SPDX-License-Identifier: Apache-2.0
// Who runs a Client's io_context: its I/O thread, or a thread blocked in one of the Client's
// calls, one at a time (issue 35).
//
// A blocking call handed to the I/O thread costs two thread switches on top of its round trip
// (caller -> I/O thread -> caller), and on one CPU the two threads take turns on it. So a
// caller blocked in a call runs the loop itself when it can: it writes its request, reads the
// reply, and runs whatever else comes meanwhile (other calls' replies, pub/sub messages,
// timers). A waiter blocked in lock() whose wake-up or grant arrives returns with no thread
// switch at all.
//
// The rule that keeps this safe is the I/O thread's: the Client's state is touched only by the
// thread running its io_context, and at most one thread runs it at any moment (the holder of
// the turn). How the turn moves:
// - a caller that finds the turn free takes it, and gives it back when its outcome is in;
// - a caller that finds the I/O thread holding it is served by it, as before; if its outcome
//   is not in after Config::busy_poll (a wait for a held lock), it asks for the turn and runs
//   the rest of its wait itself;
// - the I/O thread gives its turn up after it delivered a blocked caller's outcome, and takes
//   it back once no caller has held it for busy_poll: a thread making one call after another
//   then runs every call but the first itself, and the I/O thread sleeps meanwhile;
// - a caller that finds another caller holding the turn is served by that one; should it have
//   to sleep, the holder hands the loop to the I/O thread at once when it leaves.
#pragma once

#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace redisync::detail {

class LoopTurns {
 public:
  using Clock = std::chrono::steady_clock;

  /// `busy_poll` (Config::busy_poll; 0 = never): how long a runner polls, yielding, after its
  /// last event instead of sleeping in epoll_wait while `awaiting_reply()`; how long a blocked
  /// caller yields before it sleeps; and how long the I/O thread leaves the loop to callers
  /// after one gave it back.
  LoopTurns(asio::io_context& io, std::chrono::microseconds busy_poll,
            std::function<bool()> awaiting_reply);
  LoopTurns(const LoopTurns&) = delete;
  LoopTurns& operator=(const LoopTurns&) = delete;

  /// The I/O thread's body: runs the loop in the turns callers leave it, until stop().
  void run_io_thread();
  /// Stops the io_context and wakes the I/O thread so that run_io_thread() returns.
  void stop();
  /// Runs `work` on the loop, handed over from a thread that will not run it (an async
  /// call's start, a cancellation, the close) through `post(handler)` (asio::post, or the
  /// Client's intake). The I/O thread runs it at once: if nobody runs the loop now (the I/O
  /// thread waits for a caller's next call), and as soon as whoever runs it now gives it up
  /// before it ran `work` (its own outcome came first). Any thread.
  template <class Post, class Work>
  void post_from_outside(Post&& post, Work work) {
    outside_work_.fetch_add(1);
    try {
      post([this, work = std::move(work)]() mutable {
        outside_work_.fetch_sub(1);
        work();
      });
    } catch (...) {
      outside_work_.fetch_sub(1);
      throw;
    }
    wake_io_thread_if_unrun();
  }
  template <class Work>
  void post_from_outside(Work work) {
    post_from_outside([this](auto handler) { asio::post(io_, std::move(handler)); },
                      std::move(work));
  }
  /// Ends the epoll_wait of whoever runs the loop now (a no-op handler posted): after an
  /// outcome was delivered from outside the loop, or to have the I/O thread hand it over.
  void interrupt_runner();

  /// A caller blocked in a call. `hand_over()` starts its work (posts it to the io_context,
  /// which whoever runs the loop runs); the caller then runs the loop, or is served, until
  /// `ready`. Returns once `ready` is set or the io_context stopped. Not on a thread running
  /// this loop (it would wait for itself).
  template <class HandOver>
  void serve(HandOver&& hand_over, const std::atomic<bool>& ready) {
    const Blocked counted(blocked_);
    const bool leading = take_free_turn();
    hand_over();
    if (leading) {
      lead(ready);
    } else {
      follow(ready);
    }
  }

  /// The loop's runner delivered a blocked caller's outcome. On the I/O thread: it gives the
  /// turn up after this step, so that caller's next call takes it (see above).
  void outcome_delivered() { delivered_ = true; }

 private:
  enum class Holder { none, io_thread, caller };

  struct Blocked {
    explicit Blocked(std::atomic<int>& n) : n_(n) { n_.fetch_add(1, std::memory_order_relaxed); }
    ~Blocked() { n_.fetch_sub(1, std::memory_order_relaxed); }
    Blocked(const Blocked&) = delete;
    Blocked& operator=(const Blocked&) = delete;
    std::atomic<int>& n_;
  };

  void wake_io_thread_if_unrun();
  bool take_free_turn();                      // true: the turn is now this caller's
  bool take_turn_if_free();                   // the same, mutex_ held
  void lead(const std::atomic<bool>& ready);  // runs the loop until ready, gives the turn back
  void follow(const std::atomic<bool>& ready);
  void give_turn_back();
  void run_until(const std::atomic<bool>& ready);
  // I/O thread: waits until the turn is its own; false once stopped.
  bool wait_for_turn();
  // I/O thread: runs the loop until a caller asks for the turn, it delivered an outcome, or
  // the io_context stops.
  void run_io_turn();

  asio::io_context& io_;
  const Clock::duration busy_poll_;
  const std::function<bool()> awaiting_reply_;

  std::mutex mutex_;
  std::condition_variable turn_free_;   // askers waiting for the I/O thread to hand over
  std::condition_variable io_may_run_;  // the I/O thread parked
  Holder holder_ = Holder::none;        // mutex_
  Clock::time_point taken_at_{};        // mutex_: when the holder took the turn
  Clock::time_point given_back_{};      // mutex_: when a caller last gave the turn back
  bool io_parked_untimed_ = false;      // mutex_: the I/O thread waits for a notify
  int sleepers_ = 0;                    // mutex_: callers asleep until another serves them
  bool stopping_ = false;               // mutex_
  std::atomic<int> askers_{0};          // callers waiting for the I/O thread to hand over
  std::atomic<int> blocked_{0};         // threads in serve()
  std::atomic<int> outside_work_{0};    // posted by post_from_outside and not run yet
  bool delivered_ = false;              // the loop's runner only (see outcome_delivered)
  std::atomic<int> runners_{0};         // threads running the loop now: 0 or 1 (checked)
};

}  // namespace redisync::detail
