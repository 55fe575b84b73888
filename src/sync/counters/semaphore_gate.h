// SPDX-License-Identifier: Apache-2.0
// Pieces shared by Semaphore and PermitExpirableSemaphore (docs/wire-format.md §7, §8, §13):
//   * the message policy of "redisson_sc:TAG(N)": a message carrying the new count v wakes up
//     to min(v, local waiters) waiters;
//   * the local gate that keeps a waiter for n permits from being starved by later waiters
//     for fewer permits of the same Client.
//
// The gate: per (Client, semaphore), acquisitions are kept in the order they were made. An
// acquisition talks to the server (runs its acquire loop: attempt, subscribe, sleep until a
// message / deadline, retry) only while no earlier acquisition that is still waiting wants
// more permits than it does. So a waiter for n holds back every later waiter for fewer than
// n until it has its permits (or gives up); waiters for the same count (the common case,
// acquire(1)) run side by side and are woken in FIFO order by release messages, so the push
// handoff is not serialised. A held-back acquisition whose wait ends gives up without a
// server call; so does a zero-wait try that is held back (no barging past a bigger waiter).
// Across Clients/processes there is no ordering (Redisson has none either).
//
// Threading: io thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>

#include "net/subscriber.h"
#include "sync/acquire/acquire_loop.h"

namespace redisync::detail {
class CancelSignal;  // sync/acquire/cancel_signal.h
}

namespace redisync::sync {

/// How many local waiters a semaphore-channel message wakes: its value v when v > 0, 0 when
/// v <= 0 (no permits to take), -1 ("all, let them re-check") when it is not an integer.
/// Pure, for unit tests.
long long semaphore_wakeups(std::string_view payload);

/// The MessagePolicy of semaphore channels (both kinds share "redisson_sc:TAG(N)").
void semaphore_message_policy(net::Channel& channel, const std::string& payload,
                              net::PublishedAfter);

/// "redisson_sc:TAG(N)".
std::string semaphore_channel(const std::string& name);

class SemaphoreGate : public std::enable_shared_from_this<SemaphoreGate> {
 public:
  using Done = std::function<void(std::exception_ptr, bool acquired)>;
  /// Runs one acquisition (its acquire loop) bounded by `deadline`; calls `done` once.
  using Start = std::function<void(std::optional<Clock::time_point> deadline, Done done)>;

  /// The gate of `key` (e.g. "sem:" + name) for the Client identified by `owner`; created on
  /// first use, gone when idle.
  static std::shared_ptr<SemaphoreGate> of(const void* owner, const std::string& key,
                                           asio::io_context& io);

  SemaphoreGate(const void* owner, std::string key, asio::io_context& io);
  ~SemaphoreGate();
  SemaphoreGate(const SemaphoreGate&) = delete;
  SemaphoreGate& operator=(const SemaphoreGate&) = delete;

  /// Queues an acquisition of `permits`. `deadline` nullopt: no limit. `done(error,
  /// acquired)` is called exactly once, on the io thread (possibly before enqueue returns).
  /// `cancel` (optional): a cancellation while the acquisition is held back gives it up with
  /// CancelledError, without a server call; once it runs, its acquire loop listens to it
  /// (`start` hands it on).
  void enqueue(std::int64_t permits, std::optional<Clock::time_point> deadline, Start start,
               Done done, std::shared_ptr<detail::CancelSignal> cancel = nullptr);

  /// Acquisitions queued or running.
  std::size_t size() const { return queue_.size(); }
  /// Acquisitions running (talking to the server).
  std::size_t running() const { return running_; }

 private:
  struct Entry {
    std::int64_t permits = 0;
    std::optional<Clock::time_point> deadline;
    Start start;
    Done done;
    std::unique_ptr<asio::steady_timer> timer;  // gives up a queued entry at its deadline
    std::shared_ptr<detail::CancelSignal> cancel;  // attached while held back
    bool started = false;
  };
  /// True if no earlier entry of the queue wants more than `permits`.
  bool may_run(std::int64_t permits, std::size_t position) const;
  void advance();
  /// A held-back entry gives up (its deadline passed: error nullptr; cancelled).
  void give_up_queued(const std::shared_ptr<Entry>& entry, std::exception_ptr error);
  void run(const std::shared_ptr<Entry>& entry);
  void finished(const std::shared_ptr<Entry>& entry, std::exception_ptr error, bool acquired);

  const void* owner_;
  std::string key_;
  asio::io_context& io_;
  std::deque<std::shared_ptr<Entry>> queue_;
  std::size_t running_ = 0;
};

}  // namespace redisync::sync
