// SPDX-License-Identifier: Apache-2.0
#include "sync/loop_turns.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include <asio/post.hpp>

#include "sync/trace_points.h"

namespace redisync::detail {

namespace {

// Stops the process at once if two threads ever run the loop together, the rule this class
// exists to keep (ThreadSanitizer checks the same from the data it sees, in its builds only).
// Two atomic operations per step of the loop, in every build: the state the loop guards would
// be corrupted past any recovery.
class Running {
 public:
  explicit Running(std::atomic<int>& runners) : runners_(runners) {
    if (runners_.fetch_add(1, std::memory_order_acq_rel) != 0) {
      std::fputs("redisync: two threads ran one Client's event loop at once (a bug)\n", stderr);
      std::abort();
    }
  }
  ~Running() { runners_.fetch_sub(1, std::memory_order_acq_rel); }
  Running(const Running&) = delete;
  Running& operator=(const Running&) = delete;

 private:
  std::atomic<int>& runners_;
};

}  // namespace

LoopTurns::LoopTurns(asio::io_context& io, std::chrono::microseconds busy_poll,
                     std::function<bool()> awaiting_reply)
    : io_(io),
      busy_poll_(std::chrono::duration_cast<Clock::duration>(busy_poll)),
      awaiting_reply_(std::move(awaiting_reply)) {}

void LoopTurns::run_io_thread() {
  while (wait_for_turn()) {
    run_io_turn();
    std::lock_guard lock(mutex_);
    holder_ = Holder::none;
    // After an outcome it delivered, the loop waits for that caller's next call (a moment).
    if (delivered_) given_back_ = Clock::now();
    turn_free_.notify_all();
  }
}

void LoopTurns::stop() {
  io_.stop();
  std::lock_guard lock(mutex_);
  stopping_ = true;
  io_may_run_.notify_all();
  turn_free_.notify_all();
}

void LoopTurns::wake_io_thread_if_unrun() {
  std::lock_guard lock(mutex_);
  // Whoever holds the turn now rechecks outside_work_ as it gives the turn up.
  if (holder_ == Holder::none) io_may_run_.notify_all();
}

bool LoopTurns::wait_for_turn() {
  // A caller's turn longer than this (a wait for a held lock) makes the I/O thread sleep
  // until it is told the turn is free; a shorter one it checks on when it should have ended,
  // so that a thread making call after call never pays a wake-up of the I/O thread.
  constexpr Clock::duration kLongTurn = std::chrono::milliseconds(1);
  std::unique_lock lock(mutex_);
  for (;;) {
    if (stopping_ || io_.stopped()) return false;
    const auto now = Clock::now();
    if (askers_.load() > 0 || (holder_ == Holder::caller && now - taken_at_ >= kLongTurn)) {
      io_parked_untimed_ = true;
      REDISYNC_TRACE_POINT("io_parked");
      io_may_run_.wait(lock);
      io_parked_untimed_ = false;
      continue;
    }
    if (holder_ == Holder::caller) {
      io_may_run_.wait_until(lock, taken_at_ + kLongTurn);
      continue;
    }
    // The turn is free. A caller gave it back a moment ago: its next call is likely to come
    // soon, and would find the I/O thread in epoll_wait and be served with two thread switches.
    const auto until = given_back_ + busy_poll_;
    if (sleepers_ == 0 && outside_work_.load() == 0 && now < until) {
      io_may_run_.wait_until(lock, until);
      continue;
    }
    holder_ = Holder::io_thread;
    taken_at_ = now;
    return true;
  }
}

void LoopTurns::run_io_turn() {
  // While a caller is blocked and one of its requests is in flight, poll instead of sleeping
  // in epoll_wait, for at most busy_poll after the last event, yielding to any other runnable
  // thread: sleeping while the reply travels adds the wake-up of an idle CPU, on a virtual
  // machine the largest cost of a round trip. A waiter parked on pub/sub has nothing in
  // flight, so many waiting processes do not spin.
  const auto grace = std::min(busy_poll_, Clock::duration(std::chrono::microseconds(30)));
  Clock::time_point poll_until{};   // last event + busy_poll
  Clock::time_point grace_until{};  // last event + grace: the caller's next request comes soon
  auto on_event = [&] {
    if (busy_poll_.count() <= 0 || blocked_.load(std::memory_order_relaxed) == 0) return;
    const auto now = Clock::now();
    poll_until = now + busy_poll_;
    grace_until = now + grace;
  };
  delivered_ = false;
  while (!io_.stopped() && askers_.load() == 0 && !delivered_) {
    const auto now = Clock::now();
    if (now < poll_until && blocked_.load(std::memory_order_relaxed) > 0 &&
        (now < grace_until || awaiting_reply_())) {
      const Running running(runners_);
      if (io_.poll_one() > 0) {  // one at a time: an outcome delivered ends the turn at once
        on_event();
      } else {
        REDISYNC_TRACE_POINT("yield");
        std::this_thread::yield();
      }
      continue;
    }
    REDISYNC_TRACE_POINT("io_sleep");
    const Running running(runners_);
    const auto ran = io_.run_one();
    REDISYNC_TRACE_POINT("io_woke");
    if (ran > 0) on_event();
  }
}

void LoopTurns::interrupt_runner() { asio::post(io_, [] {}); }

bool LoopTurns::take_free_turn() {
  std::lock_guard lock(mutex_);
  return take_turn_if_free();
}

bool LoopTurns::take_turn_if_free() {
  if (stopping_ || holder_ != Holder::none) return false;
  holder_ = Holder::caller;
  taken_at_ = Clock::now();
  return true;
}

void LoopTurns::lead(const std::atomic<bool>& ready) {
  struct GiveBack {
    LoopTurns& turns;
    ~GiveBack() { turns.give_turn_back(); }  // an exception out of a handler included
  } give_back{*this};
  run_until(ready);
}

void LoopTurns::follow(const std::atomic<bool>& ready) {
  // Served by the loop's runner: yield until `ready` for up to busy_poll (an outcome that
  // comes within it is picked up without a futex sleep and wake-up), taking the turn should
  // it come free.
  for (const auto until = Clock::now() + busy_poll_;
       !ready.load(std::memory_order_acquire) && Clock::now() < until;) {
    if (take_free_turn()) return lead(ready);
    std::this_thread::yield();
  }
  if (ready.load(std::memory_order_acquire)) return;
  // A longer wait (for a held lock, or a slow server): run the loop, so that the wake-up or
  // grant reaches this thread directly, unless another caller runs it.
  std::unique_lock lock(mutex_);
  while (!ready.load(std::memory_order_acquire)) {
    if (take_turn_if_free()) {
      lock.unlock();
      return lead(ready);
    }
    if (!stopping_ && holder_ == Holder::io_thread && busy_poll_.count() > 0) {
      askers_.fetch_add(1);
      lock.unlock();
      interrupt_runner();  // the I/O thread leaves epoll_wait and hands the turn over
      lock.lock();
      turn_free_.wait(lock, [&] { return holder_ != Holder::io_thread || stopping_; });
      askers_.fetch_sub(1);
      // The I/O thread parked for this asker; it may be served already (the I/O thread
      // delivered its outcome before it handed over) and take nothing.
      if (io_parked_untimed_) io_may_run_.notify_all();
      continue;
    }
    // Another caller runs the loop (or the I/O thread, with busy_poll 0, or the loop
    // stopped): sleep until served. A caller leaving the loop hands it to the I/O thread at
    // once while someone sleeps.
    ++sleepers_;
    lock.unlock();
    ready.wait(false, std::memory_order_acquire);
    lock.lock();
    --sleepers_;
    return;
  }
}

void LoopTurns::give_turn_back() {
  std::lock_guard lock(mutex_);
  holder_ = Holder::none;
  given_back_ = Clock::now();
  if (sleepers_ > 0 || outside_work_.load() > 0 || busy_poll_.count() <= 0) {
    // Someone waits to be served, work handed over from outside is not run yet (or no
    // lingering): the I/O thread takes the loop now.
    given_back_ = {};
    io_may_run_.notify_all();
  } else if (io_parked_untimed_) {
    io_may_run_.notify_all();  // it waits for the linger from here
  }
}

void LoopTurns::run_until(const std::atomic<bool>& ready) {
  REDISYNC_TRACE_POINT("lead");
  // The caller handed its work over just now: that is the last event.
  auto poll_until = Clock::now() + busy_poll_;
  while (!ready.load(std::memory_order_acquire) && !io_.stopped()) {
    if (Clock::now() < poll_until && awaiting_reply_()) {
      const Running running(runners_);
      if (io_.poll_one() > 0) {
        poll_until = Clock::now() + busy_poll_;
      } else {
        std::this_thread::yield();
      }
      continue;
    }
    const Running running(runners_);
    if (io_.run_one() > 0) poll_until = Clock::now() + busy_poll_;
  }
}

}  // namespace redisync::detail
