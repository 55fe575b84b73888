// SPDX-License-Identifier: Apache-2.0
// LoopTurns (src/sync/loop_turns.h) on a bare io_context, with no server: which thread runs a
// blocked caller's work, and that the loop never runs on two threads at once and never stops
// being run while a caller waits to be served. A call here is what ClientCore::call makes of
// it: work handed over to the loop that completes, later, on the loop, and sets `ready`.
#include <gtest/gtest.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "sync/loop_turns.h"

using namespace std::chrono_literals;
using redisync::detail::LoopTurns;

namespace {

class Loop {
 public:
  explicit Loop(std::chrono::microseconds busy_poll)
      : turns_(io_, busy_poll, [this] { return in_flight_.load() > 0; }),
        io_thread_([this] { turns_.run_io_thread(); }) {
    // Once this ran, the I/O thread holds the loop (no caller has asked for it yet).
    std::atomic<bool> running{false};
    asio::post(io_, [&] { running.store(true); });
    while (!running.load()) std::this_thread::yield();
  }
  ~Loop() {
    work_.reset();
    turns_.stop();
    io_thread_.join();
  }

  /// A blocking call: its work runs on the loop, waits `delay` on a timer there, then
  /// completes. Returns the id of the thread that ran the completion.
  std::thread::id call(std::chrono::microseconds delay) { return call(delay, nullptr); }
  /// A call whose completion, after it set `ready` and before it returns, has another thread
  /// post async work (`post_async_work(*async_done)`): work that arrives as the loop's
  /// runner is about to give up its turn.
  std::thread::id call(std::chrono::microseconds delay, std::atomic<int>* async_done) {
    auto ready = std::make_shared<std::atomic<bool>>(false);
    auto ran_on = std::make_shared<std::thread::id>();
    turns_.serve(
        [&] {
          ++in_flight_;
          asio::post(io_, [this, delay, ready, ran_on, async_done] {
            auto timer = std::make_shared<asio::steady_timer>(io_, delay);
            timer->async_wait([this, timer, ready, ran_on, async_done](std::error_code) {
              enter();
              *ran_on = std::this_thread::get_id();
              --in_flight_;
              turns_.outcome_delivered();  // as ClientCore::call's completion does
              ready->store(true, std::memory_order_release);
              ready->notify_all();
              if (async_done != nullptr) {
                std::thread([this, async_done] { post_async_work(*async_done); }).join();
              }
              leave();
            });
          });
        },
        *ready);
    EXPECT_TRUE(ready->load());
    return *ran_on;
  }

  /// Work that is nobody's call (an async caller's, a timer's): runs on the loop.
  void post_other_work() {
    asio::post(io_, [this] {
      enter();
      ++other_work_done_;  // plain int: only the loop's runner touches it
      leave();
    });
  }
  /// An async call's start: posted from a thread that does not run the loop.
  void post_async_work(std::atomic<int>& done) {
    turns_.post_from_outside([&done] { ++done; });  // as ClientCore::post_start does
  }
  int other_work_done() {
    std::atomic<bool> ready{false};
    int seen = 0;
    turns_.serve([&] { asio::post(io_, [&] {
                   seen = other_work_done_;
                   ready.store(true);
                   ready.notify_all();
                 }); },
                 ready);
    return seen;
  }

  std::thread::id io_thread_id() const { return io_thread_.get_id(); }

 private:
  // Handlers check by hand that no other thread is inside one (besides LoopTurns' own check
  // and ThreadSanitizer's).
  void enter() {
    if (inside_.fetch_add(1) != 0) {
      std::fputs("two threads ran the loop's handlers at once\n", stderr);
      std::abort();
    }
  }
  void leave() { inside_.fetch_sub(1); }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  std::atomic<int> in_flight_{0};
  std::atomic<int> inside_{0};
  int other_work_done_ = 0;
  LoopTurns turns_;
  std::thread io_thread_;
};

// Fails the test (by stopping the process with a message) if `body` has not returned by
// `limit`: a caller nobody serves waits forever otherwise.
template <class Body>
void within(std::chrono::seconds limit, Body body) {
  std::atomic<bool> done{false};
  std::thread guard([&] {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done.load() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(10ms);
    }
    if (!done.load()) {
      std::fputs("the loop stopped being run: a blocked caller or posted work was never served\n", stderr);
      std::abort();
    }
  });
  body();
  done.store(true);
  guard.join();
}

// Runs `body(t)` on `n` threads at once, t = 0..n-1, and joins them.
template <class Body>
void on_threads(int n, Body body) {
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) threads.emplace_back(body, t);
  for (auto& thread : threads) thread.join();
}

}  // namespace

TEST(LoopTurns, TheNextCallOfACallerTheIoThreadServedRunsOnTheCallersOwnThread) {
  // busy_poll 300 ms: the I/O thread leaves the loop that long after it served a caller, far
  // longer than the test thread takes to make its next call on a loaded machine.
  Loop loop(300ms);
  within(30s, [&] {
    // The I/O thread holds the loop at first: it serves the first call.
    EXPECT_EQ(loop.call(0us), loop.io_thread_id());
    EXPECT_EQ(loop.call(0us), std::this_thread::get_id());
    EXPECT_EQ(loop.call(0us), std::this_thread::get_id());
  });
}

TEST(LoopTurns, ACallerWaitingLongerThanBusyPollRunsTheLoopItself) {
  Loop loop(1ms);
  within(30s, [&] {
    // The wait (a lock held by someone else, say) outlasts busy_poll: the caller asks for the
    // loop and the completion, when it comes, runs on its own thread.
    EXPECT_EQ(loop.call(500ms), std::this_thread::get_id());
  });
}

TEST(LoopTurns, WorkOfOthersRunsWhileACallerHoldsTheLoopAndAfterItLeaves) {
  Loop loop(1ms);
  within(30s, [&] {
    std::thread waiter([&] { loop.call(300ms); });
    std::this_thread::sleep_for(50ms);  // the waiter runs the loop by now
    for (int i = 0; i < 100; ++i) loop.post_other_work();
    EXPECT_EQ(loop.other_work_done(), 100);
    waiter.join();
    for (int i = 0; i < 100; ++i) loop.post_other_work();
    EXPECT_EQ(loop.other_work_done(), 200);
  });
}

TEST(LoopTurns, ManyCallersNeverRunTheLoopTogetherAndEveryCallReturns) {
  // Short busy_poll and completions around it: callers take the loop, ask for it, sleep,
  // and are served by the I/O thread and by one another in every order. A caller left
  // unserved hangs (`within` stops the test); two runners at once stop the process.
  Loop loop(50us);
  within(120s, [&] {
    constexpr int kThreads = 6;
    constexpr int kCalls = 300;
    std::thread others([&] {
      for (int i = 0; i < 2000; ++i) {
        loop.post_other_work();
        if (i % 20 == 0) std::this_thread::sleep_for(100us);
      }
    });
    on_threads(kThreads, [&](int t) {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::uniform_int_distribution<int> delay_us(0, 400);
      for (int i = 0; i < kCalls; ++i) {
        loop.call(std::chrono::microseconds(delay_us(rng)));
        if (i % 50 == 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us(rng)));
      }
    });
    others.join();
    EXPECT_EQ(loop.other_work_done(), 2000);
  });
}

TEST(LoopTurns, CallersEndingTogetherLeaveNoneUnserved) {
  // Rounds of calls that all end at once: the last callers of a round have no one after them
  // to take the loop, so a hand-over that leaves the loop unrun (a caller asking for the turn
  // whose outcome the I/O thread delivered just before it handed over, while another caller
  // sleeps) hangs the round. Completions come around busy_poll, when callers ask.
  Loop loop(50us);
  within(120s, [&] {
    constexpr int kThreads = 4;
    constexpr int kRounds = 1000;
    for (int round = 0; round < kRounds; ++round) {
      on_threads(kThreads, [&](int t) {
        std::mt19937 rng(static_cast<unsigned>(round * kThreads + t));
        std::uniform_int_distribution<int> delay_us(0, 300);
        for (int i = 0; i < 3; ++i) loop.call(std::chrono::microseconds(delay_us(rng)));
      });
      std::this_thread::sleep_for(300us);  // the I/O thread takes the loop back meanwhile
    }
  });
}

TEST(LoopTurns, AsyncWorkPostedWhileNobodyRunsTheLoopIsRunAtOnce) {
  // A 60 s linger: after it served a caller, the I/O thread would leave the loop unrun that
  // long, waiting for the caller's next call. An async call's work must not wait for it.
  Loop loop(60s);
  within(30s, [&] {
    loop.call(0us);  // served by the I/O thread, which then leaves the loop to this thread
    std::atomic<int> done{0};
    loop.post_async_work(done);
    while (done.load() == 0) std::this_thread::sleep_for(1ms);
  });
}

TEST(LoopTurns, AsyncWorkPostedAsTheIoThreadDeliversAnOutcomeIsRunAtOnce) {
  // The work comes after the I/O thread ran the caller's completion and before it gave up its
  // turn: it must not leave that work to wait out the 60 s linger.
  Loop loop(60s);
  within(30s, [&] {
    std::atomic<int> done{0};
    EXPECT_EQ(loop.call(0us, &done), loop.io_thread_id());
    while (done.load() == 0) std::this_thread::sleep_for(1ms);
  });
}

TEST(LoopTurns, AsyncWorkPostedAsACallerLeavesTheLoopIsRunAtOnce) {
  // The same as a caller running the loop itself gives it back.
  Loop loop(60s);
  within(30s, [&] {
    loop.call(0us);  // served by the I/O thread, which then leaves the loop to this thread
    std::atomic<int> done{0};
    EXPECT_EQ(loop.call(0us, &done), std::this_thread::get_id());
    while (done.load() == 0) std::this_thread::sleep_for(1ms);
  });
}
