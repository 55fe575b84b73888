// SPDX-License-Identifier: Apache-2.0
// The push-based waiting protocol shared by every pub/sub lock kind (docs/wire-format.md §13):
//   attempt -> (held) subscribe -> attempt again once subscribed -> sleep until a release
//   message or the holder's remaining lease -> attempt -> ...
// Its decisions are AcquireFsm's (acquire_fsm.h, no I/O); this class performs them.
// When the channel is subscribed already before the first attempt (a recent or concurrent
// waiter of this process), the loop joins it first and skips the subscribe-and-ask-again step.
// The retry that follows a release message is sent by the I/O thread itself, inside the
// message handler, so a handoff costs one round trip and no thread hop.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "net/executor.h"
#include "net/io_thread.h"
#include "net/subscriber.h"
#include "sync/acquire/acquire_fsm.h"
#include "sync/acquire/acquire_outcome.h"
#include "sync/acquire/acquire_steps.h"
#include "sync/failure_kind.h"  // may_have_run, for the callers of this header
#include "sync/acquire/grant.h"

namespace redisync::detail {
class CancelSignal;  // sync/acquire/cancel_signal.h
}

namespace redisync::sync {

using Clock = std::chrono::steady_clock;

/// What one acquisition's loop counted, for the Metrics hook (sync/metrics_report.h).
struct AcquireProbe {
  std::uint64_t attempts = 0;  ///< acquire steps run
  std::uint64_t wake_ups = 0;  ///< release messages that woke this loop
  std::optional<Clock::time_point> last_wake;
};

/// The deadline of a wait of `wait` from now. nullopt (no limit) when wait < 0, and when the
/// deadline lies beyond what the steady clock can represent (~292 years from its epoch): such
/// waits are waits without limit, never an overflow into the past (issue 22).
std::optional<Clock::time_point> deadline_after(Duration wait);

/// One acquisition in progress. Lives on the I/O thread; owns itself until done.
class AcquireLoop : public net::Waiter,
                    public sync::GrantWaiter,
                    public std::enable_shared_from_this<AcquireLoop> {
 public:
  using AttemptDone = AcquireSteps::Done;
  using AttemptFn = AcquireSteps::Step;
  /// The completion: the outcome says whether it acquired and from what the hold's local
  /// deadline is derived (acquire_outcome.h).
  using Done = std::function<void(std::exception_ptr, const AcquireOutcome&)>;

  struct Params {
    /// What a message on the channel wakes (a plain function: every kind's is one).
    void (*policy)(net::Channel&, const std::string& payload, net::PublishedAfter) = nullptr;
    std::optional<Clock::time_point> deadline;  ///< nullopt: wait without limit
    /// The kind's steps (acquire_steps.h): the channel to sleep on, the attempt, the recheck
    /// and settle steps after an attempt that may have run on the server, the give-up
    /// cleanup. A settle step finds an acquisition such an attempt made before the loop gives
    /// up, so the caller never hears "no" while it holds (issue 22).
    std::shared_ptr<AcquireSteps> steps;
    /// Connection errors and timeouts are retried this many times in a row (waiting
    /// `retry_interval` between tries, within the deadline) before they are reported.
    int retry_attempts = 0;
    Duration retry_interval{1500};
    /// Optional: counts attempts and wake-ups (set when a Metrics hook is).
    std::shared_ptr<AcquireProbe> probe;
    /// Grant mode (sync/acquire/grant.h): the loop joins the grant channel and lists itself in the
    /// registry; the kind's attempt registers on the server through the same link.
    std::shared_ptr<GrantLink> grant;
    /// Optional (async acquisitions whose handler has a cancellation slot): a cancellation
    /// requested on it makes the loop give up as if its deadline had passed, reporting
    /// CancelledError (AcquireFsm::cancel).
    std::shared_ptr<detail::CancelSignal> cancel;
    /// Set: a spin acquisition (AcquireFsm::Settings::spin): no channel, no policy; it polls
    /// from its first attempt with these sleeps.
    std::shared_ptr<BackoffSequence> spin;
  };

  static void start(net::Executor& executor, Params params, Done done);

  void wake() override;
  void grant_news(GrantNews news, const GrantMessage& message) override;

 private:
  // Only start() constructs (the key is private), with make_shared: one allocation per
  // acquisition for the loop and its count.
  struct Key {};

 public:
  AcquireLoop(Key, net::Executor& executor, Params params, Done done);

 private:
  /// Performs what the state machine decided.
  void apply(AcquireAction action);
  void send(AcquireAction::Kind kind);  // attempt, recheck or settle
  void subscribe(Duration limit);
  void arm_timer(Duration bound);
  void leave_channel();
  void cancel();  // the cancellation signal fired (I/O thread)
  void finish(std::exception_ptr error, bool acquired);
  // A recheck or settle step that acquired by finding a grant (AttemptResult::grant) notes it.
  void note_found_grant(const AttemptResult& result);

  net::Executor& executor_;
  // What the loop keeps of its Params (the deadline and retry settings are the FSM's).
  std::shared_ptr<AcquireSteps> steps_;
  void (*policy_)(net::Channel&, const std::string& payload, net::PublishedAfter);
  std::shared_ptr<AcquireProbe> probe_;
  std::shared_ptr<GrantLink> grant_;
  std::shared_ptr<detail::CancelSignal> cancel_;
  Done done_;
  AcquireFsm fsm_;
  std::shared_ptr<net::Channel> channel_;
  net::WaitTimer timer_;
  bool subscribing_ = false;
  bool finished_ = false;
  // A release message (or a wake-up taken while an attempt was in flight) came since the
  // last attempt was sent.
  bool woken_ = false;
  // An attempt sent after a release message did not acquire: another client (or waiter)
  // took the lock first. A starvation-guard claimant then keeps its claim fresh
  // (AttemptResult::shared_poll_ms); a waiter never outrun sleeps until the next message.
  bool contended_ = false;
  struct Granted {
    Duration lease;                    // the releaser's grant lease (or what is left of it)
    Clock::time_point made_after;      // the lease counts from no earlier than this
    std::string id;                    // the acquisition the grant mark names
  };
  // Completed by a grant: its message, or a recheck or settle step that found it (held out of
  // line: only grant mode has one, and every waiter would carry its size).
  std::unique_ptr<Granted> by_grant_;
  // Completed by a hold a recheck or settle step found: what it read (AttemptResult::found).
  std::optional<GrantFound> found_;
  std::exception_ptr last_error_;     // the last attempt's error, if it failed
  Clock::time_point attempt_sent_{};  // send time of the last attempt (not of a recheck)
  std::uint64_t round_ = 0;  // invalidates timer callbacks of earlier sleeps
  std::shared_ptr<AcquireLoop> self_;  // keeps the loop alive while it waits
};

}  // namespace redisync::sync
