// SPDX-License-Identifier: Apache-2.0
// The decisions of one acquisition's wait (docs/wire-format.md §13) as a state machine without
// I/O: events in (an attempt's reply or error, a subscription confirmed or failed, a message,
// a timer), the next action out. `AcquireLoop` (acquire_loop.h) performs the actions on the
// I/O thread; the unit tests drive this class with a fake clock and scripted replies.
//
//   attempt -> (held) subscribe -> attempt -> sleep until a message or the holder's TTL -> ...
//   attempt error: retry after a pause; an attempt that may have run is rechecked, never
//   repeated blindly; before answering "no" after one, settle (ask whether it acquired).
//   subscription failed: poll (attempt every poll interval) instead of waiting for messages.
//   a spin acquisition (Settings::spin) polls from its first attempt, sleeping its backoff.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "redisync/config.h"
#include "sync/acquire/spin_backoff.h"

namespace redisync::sync {

using Clock = std::chrono::steady_clock;

/// A grant made to an acquisition's owner that a recheck or settle step found, not taken yet
/// (grant mode, sync/acquire/grant.h): the hold has the releaser's short grant lease on the
/// server, and the acquisition completes as a grant does (the local deadline the grant lease,
/// then the extension to its own lease).
struct GrantFound {
  Duration lease{0};  ///< the hold's remaining lease on the server, read with the grant mark
  Clock::time_point read_sent{};  ///< when that read was sent: `lease` counts from no earlier
};

/// Outcome of one acquire attempt.
struct AttemptResult {
  bool acquired = false;
  /// When not acquired: the holder's remaining lease in ms (PTTL); -1 = no expiry.
  long long ttl_ms = -1;
  /// When not acquired: attempt again within this many ms where a release message may miss
  /// this waiter (a starvation-guard claimant): while other waiters of this process wait on
  /// the same channel (a message wakes one of them, maybe another), or once another took the
  /// lock after a release (its claim must still hold at the next one). -1 = no such bound.
  /// The loop applies it (AcquireLoop), and only in those two cases.
  long long shared_poll_ms = -1;
  /// When acquired by finding a grant not taken yet (a recheck or settle step).
  std::optional<GrantFound> grant = std::nullopt;
  /// When a recheck or settle step found the hold (grant or not): the lock's remaining lease
  /// it read and when that read was sent. The hold found may be an earlier acquisition's of
  /// the same owner (one whose outcome was lost, e.g. a non-reentrant lock's refused attempt
  /// then finds it): its lease on the server is what was read, not this acquisition's.
  std::optional<GrantFound> found = std::nullopt;
  /// When acquired: when the step that found it was sent (an attempt's send; a recheck or
  /// settle step's own send). A hold's local lease counts from no later than this.
  Clock::time_point sent{};
};

/// How an attempt failed, as far as the wait's decisions care.
enum class AttemptError {
  fatal,            ///< reported as it is (server error, bad reply, auth)
  retry,            ///< retryable, and the request did not reach the server
  retry_uncertain,  ///< retryable, and the request may have run (timeout, dropped after send)
};

/// What the driver does next.
struct AcquireAction {
  enum Kind {
    none,       ///< nothing (a late event the state machine has moved past)
    attempt,    ///< send the kind's acquire step (its send time counts for the lease)
    recheck,    ///< send the recheck: did the uncertain attempt acquire? if not, attempt
    settle,     ///< ask, without attempting, whether the uncertain attempt acquired
    subscribe,  ///< subscribe to the channel; confirmation expected within `bound`
    sleep,      ///< sleep on the channel until a message, at most `bound` (max(): no bound)
    pause,      ///< wait `bound`, then report timer_fired (retry pause, poll interval)
    succeed,    ///< done: acquired
    fail,       ///< done: not acquired, with `error` (the kind's give-up cleanup runs first)
  } kind = none;
  Duration bound{0};
  enum class Error {
    none,     ///< plain "not acquired" (the wait ran out)
    attempt,  ///< the last attempt's error
    unknown,  ///< the uncertain attempt's outcome could not be found out
    cancelled,  ///< not acquired: the wait was cancelled (AcquireFsm::cancel)
  } error = Error::none;
};

/// What the loop does after an attempt that did not acquire, while subscribed or subscribing.
/// Pure; kept apart for its unit tests.
struct NextStep {
  enum Kind { give_up, subscribe, retry_now, sleep } kind;
  Duration sleep_for{0};  ///< for `sleep`: the bound of the wait (message or this long)
};
NextStep decide_next_step(const AttemptResult& result, Clock::time_point now,
                          std::optional<Clock::time_point> deadline, bool subscribed,
                          bool wakeup_pending);

/// A grant message on the lock's grant channel, as it concerns one waiting acquisition
/// (sync/acquire/grant.h decides which).
enum class GrantNews {
  for_me,       ///< the lock was granted to this acquisition: it holds it
  for_other,    ///< granted to someone else: if that one is dead, the lock frees by itself
                ///< after the grant lease, with no message; sleep no longer than that
  maybe_stale,  ///< names this acquisition's owner but may be an earlier grant's: attempt
};

class AcquireFsm {
 public:
  struct Settings {
    std::optional<Clock::time_point> deadline;  ///< nullopt: wait without limit
    int retry_attempts = 0;       ///< retryable errors in a row before one is reported
    Duration retry_interval{1500};
    bool can_recheck = false;     ///< the kind has a recheck step
    bool can_settle = false;      ///< the kind has a settle step
    Duration subscription_timeout{7500};
    Duration poll_interval{100};  ///< between attempts once the subscription failed
    /// Set: a spin acquisition (SpinLock, docs/wire-format.md §10). It never subscribes: it
    /// polls from its first attempt, sleeping the sequence's next backoff between attempts
    /// (capped by the deadline; the holder's TTL is not used). Held by pointer: a sequence
    /// carries its random generator (2.5 KB), which no pub/sub waiter should pay for.
    std::shared_ptr<BackoffSequence> spin;
  };

  explicit AcquireFsm(Settings settings) : s_(std::move(settings)), polling_(s_.spin != nullptr) {}

  AcquireAction start();
  /// The attempt (or recheck) answered. `subscribed`: the channel's subscription is
  /// confirmed; `wakeup_pending`: a release message arrived while the attempt was in flight.
  AcquireAction attempt_answered(Clock::time_point now, AttemptResult result, bool subscribed,
                                 bool wakeup_pending);
  AcquireAction attempt_failed(Clock::time_point now, AttemptError error);
  AcquireAction subscription_done(Clock::time_point now, bool confirmed);
  /// A release message woke the sleeping loop.
  AcquireAction woken(Clock::time_point now);
  /// The bound of a sleep or a pause has passed.
  AcquireAction timer_fired(Clock::time_point now);
  /// The settle step answered: whether the attempt acquired, or nullopt when it could not tell.
  AcquireAction settle_answered(Clock::time_point now, std::optional<bool> acquired);
  /// A grant message concerning this acquisition (grant mode). `grant_lease`: the lease a
  /// grant starts with. `registered_sent`: send time of the last attempt that answered (and
  /// so registered, or refreshed the registration): the grant came after it, so the granted
  /// hold lasts on the server at least until registered_sent + grant_lease. A grant for me is
  /// taken at once only while, `reply_lag` (how long replies now come late) from now, at least
  /// two thirds of that is left: the granted hold keeps the grant lease until its extension
  /// lands, and under a backlog (a Client given tens of thousands of grants at once) the
  /// extension lands late and the hold is reported lost. Otherwise the acquisition attempts,
  /// which takes the grant with the normal lease in one step.
  AcquireAction grant_heard(Clock::time_point now, GrantNews news, Duration grant_lease,
                            std::optional<Clock::time_point> registered_sent,
                            Duration reply_lag = Duration{0});
  /// The caller cancelled the wait: from now on it is over, as if its deadline had passed,
  /// and a "not acquired" ending reports Error::cancelled. Asleep, pausing or subscribing:
  /// give up now (after a settle step when the last attempt may have run). An attempt or a
  /// settle step in flight: its answer decides (an attempt that acquired is an acquisition).
  AcquireAction cancel(Clock::time_point now);

  bool done() const { return phase_ == Phase::done; }
  /// True once a subscription failed, or from the start for a spin acquisition: the loop
  /// polls instead of waiting for messages.
  bool polling() const { return polling_; }
  /// True while asleep on the channel (until a message or the bound).
  bool sleeping() const { return phase_ == Phase::sleeping; }

 private:
  enum class Phase { idle, attempting, subscribing, sleeping, pausing, settling, settle_pause,
                     done };
  AcquireAction next_attempt();
  AcquireAction give_up(AcquireAction::Error error);
  AcquireAction finish(AcquireAction::Kind kind, AcquireAction::Error error);
  AcquireAction wait(Phase phase, AcquireAction::Kind kind, Duration bound);
  AcquireAction sleep_from(Clock::time_point now, Duration bound);
  bool past_deadline(Clock::time_point now) const { return s_.deadline && now >= *s_.deadline; }

  Settings s_;
  Phase phase_ = Phase::idle;
  int failures_ = 0;                // retryable errors in a row
  bool uncertain_ = false;          // the last failed attempt may have run on the server
  bool polling_ = false;
  std::optional<Clock::time_point> sleep_end_;  // when the current sleep's bound ends
  // A grant message for this acquisition came while an attempt was in flight and could not
  // be taken at once: if that attempt ran before the grant, attempt again at once.
  bool grant_pending_ = false;
  bool cancelled_ = false;
  int settle_tries_left_ = 0;
  AcquireAction::Error settle_error_ = AcquireAction::Error::none;  // reported if settled "no"
};

}  // namespace redisync::sync
