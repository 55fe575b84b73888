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
// A burst is also admitted no faster than the server answers: while kMaxInFlight requests
// are unanswered and the replies keep coming (admit_more), the rest of it waits here, where
// a call costs only its closure. Started all at once, 100,000 acquisitions each kept their
// request, attempt and loop alive until answered: 2-3 KB each, whose pages the holds' own
// small records then kept from going back to the system (RSS per hold 1.5 KB against a live
// heap of 530 B; issue 34). A stalled server (its oldest reply kStalledReplies late) stops
// nothing: the calls then start, and time out, as they would without this.
//
// Threading: push() from any thread; everything else on the I/O thread.
#pragma once

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>

#include "redisync/config.h"

namespace redisync::detail {

/// What admission reads of the requests already sent: how many are unanswered, and how long
/// the oldest of them has waited.
struct Backlog {
  std::size_t in_flight = 0;
  Duration reply_lag{0};
};

class CallerIntake {
 public:
  /// Calls started per turn of the I/O thread's loop: large enough that a turn's requests
  /// leave in one write, small enough that a turn stays well under a millisecond.
  static constexpr std::size_t kPerTurn = 64;
  /// Unanswered requests past which a burst waits in the intake (many times what keeps a
  /// server busy: redis-benchmark -P 16 -c 50 has 800 in flight).
  static constexpr std::size_t kMaxInFlight = 1024;
  /// A backlog whose oldest reply is this late is a stall, not a burst: calls are admitted.
  static constexpr Duration kStalledReplies{500};
  /// How soon a turn that found the backlog full looks again.
  static constexpr Duration kRecheck{1};

  /// True when calls may start now.
  static bool admit_more(const Backlog& backlog) {
    return backlog.in_flight < kMaxInFlight || backlog.reply_lag >= kStalledReplies;
  }

  /// `backlog` (I/O thread; empty: never full) reads the requests in flight before each turn.
  explicit CallerIntake(asio::io_context& io, std::function<Backlog()> backlog = {})
      : io_(io), backlog_(std::move(backlog)) {}
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
  /// The backlog is full: the next turn runs kRecheck later (turn_posted_ stays set).
  bool wait_for_backlog();

  asio::io_context& io_;
  std::function<Backlog()> backlog_;
  std::unique_ptr<asio::steady_timer> recheck_;  // made at the first full backlog
  std::mutex mutex_;
  std::deque<std::unique_ptr<Work>> queue_;
  bool turn_posted_ = false;  // a run_turn is queued on the io_context
};

}  // namespace redisync::detail
