// SPDX-License-Identifier: Apache-2.0
#include "sync/acquire/acquire_fsm.h"

#include <algorithm>

namespace redisync::sync {

NextStep decide_next_step(const AttemptResult& result, Clock::time_point now,
                          std::optional<Clock::time_point> deadline, bool subscribed,
                          bool wakeup_pending) {
  if (deadline && now >= *deadline) return {NextStep::give_up};
  if (!subscribed) return {NextStep::subscribe};
  if (wakeup_pending) return {NextStep::retry_now};
  // Sleep until a message, bounded by the holder's lease (it frees itself then) and by our
  // own deadline. A lock without expiry can only be freed by a release: wait for the message.
  std::optional<Duration> bound;
  if (result.ttl_ms >= 0) bound = Duration{result.ttl_ms};
  if (deadline) {
    auto left = std::chrono::ceil<Duration>(*deadline - now);
    bound = bound ? std::min(*bound, left) : left;
  }
  if (!bound) return {NextStep::sleep, Duration::max()};
  return {NextStep::sleep, std::max(*bound, Duration{0})};
}

AcquireAction AcquireFsm::start() { return next_attempt(); }

AcquireAction AcquireFsm::next_attempt() {
  // After an attempt that may have run, ask first whether it did: attempting again would
  // count a second hold (re-entry) where the caller asked for one.
  const bool recheck = uncertain_ && s_.can_recheck;
  uncertain_ = false;
  phase_ = Phase::attempting;
  return {recheck ? AcquireAction::recheck : AcquireAction::attempt};
}

AcquireAction AcquireFsm::finish(AcquireAction::Kind kind, AcquireAction::Error error) {
  phase_ = Phase::done;
  // A cancelled wait that ends "not acquired" says why.
  if (cancelled_ && kind == AcquireAction::fail && error == AcquireAction::Error::none) {
    error = AcquireAction::Error::cancelled;
  }
  return {kind, Duration{0}, error};
}

AcquireAction AcquireFsm::wait(Phase phase, AcquireAction::Kind kind, Duration bound) {
  phase_ = phase;
  return {kind, bound};
}

AcquireAction AcquireFsm::sleep_from(Clock::time_point now, Duration bound) {
  sleep_end_.reset();
  if (bound != Duration::max()) sleep_end_ = now + bound;
  return wait(Phase::sleeping, AcquireAction::sleep, bound);
}

AcquireAction AcquireFsm::give_up(AcquireAction::Error error) {
  if (uncertain_ && s_.can_settle) {
    // The caller's deadline is past or retries are spent, but the last attempt may have
    // acquired: an honest answer is worth a few more round trips.
    settle_tries_left_ = std::max(s_.retry_attempts, 1);
    settle_error_ = error;
    phase_ = Phase::settling;
    return {AcquireAction::settle};
  }
  return finish(AcquireAction::fail, error);
}

AcquireAction AcquireFsm::attempt_answered(Clock::time_point now, AttemptResult result,
                                           bool subscribed, bool wakeup_pending) {
  if (phase_ != Phase::attempting) return {};
  failures_ = 0;
  if (result.acquired) return finish(AcquireAction::succeed, AcquireAction::Error::none);
  if (grant_pending_ && !past_deadline(now)) {
    grant_pending_ = false;  // the attempt ran before the grant: the next one takes it
    return next_attempt();
  }
  if (polling_) {
    if (past_deadline(now)) return finish(AcquireAction::fail, AcquireAction::Error::none);
    Duration bound = s_.poll_interval;
    if (s_.spin) {
      bound = s_.spin->next();
    } else if (result.ttl_ms >= 0) {
      bound = std::min(bound, Duration{result.ttl_ms});
    }
    if (s_.deadline) bound = std::min(bound, std::chrono::ceil<Duration>(*s_.deadline - now));
    return wait(Phase::pausing, AcquireAction::pause, std::max(bound, Duration{0}));
  }
  const NextStep step = decide_next_step(result, now, s_.deadline, subscribed, wakeup_pending);
  switch (step.kind) {
    case NextStep::give_up:
      return finish(AcquireAction::fail, AcquireAction::Error::none);
    case NextStep::retry_now:
      return next_attempt();
    case NextStep::subscribe: {
      Duration limit = s_.subscription_timeout;
      if (s_.deadline) limit = std::min(limit, std::chrono::ceil<Duration>(*s_.deadline - now));
      return wait(Phase::subscribing, AcquireAction::subscribe, std::max(limit, Duration{1}));
    }
    case NextStep::sleep:
      return sleep_from(now, step.sleep_for);
  }
  return {};
}

AcquireAction AcquireFsm::attempt_failed(Clock::time_point now, AttemptError error) {
  if (phase_ != Phase::attempting) return {};
  if (error == AttemptError::fatal) return finish(AcquireAction::fail, AcquireAction::Error::attempt);
  // Server unreachable, restarting or failing over: try again a few times within the wait.
  uncertain_ = uncertain_ || error == AttemptError::retry_uncertain;
  Duration pause = s_.retry_interval;
  if (s_.deadline) {
    const auto left = std::chrono::floor<Duration>(*s_.deadline - now);
    // The wait is over: a timed acquire that could not get through is "not acquired",
    // unless the attempt ran after all (settled first).
    if (left <= Duration{0}) return give_up(AcquireAction::Error::none);
    pause = std::min(pause, left);
  }
  if (failures_ >= s_.retry_attempts) {
    if (!uncertain_ || !s_.can_settle) {
      return finish(AcquireAction::fail, AcquireAction::Error::attempt);
    }
    return give_up(AcquireAction::Error::attempt);
  }
  ++failures_;
  return wait(Phase::pausing, AcquireAction::pause, pause);
}

AcquireAction AcquireFsm::subscription_done(Clock::time_point now, bool confirmed) {
  if (phase_ != Phase::subscribing) return {};
  if (confirmed) return next_attempt();
  if (past_deadline(now)) return finish(AcquireAction::fail, AcquireAction::Error::none);
  // No message can reach us (no SUBSCRIBE right, a subscription that timed out): poll. The
  // first attempt goes at once, a release may have come while we subscribed.
  polling_ = true;
  return next_attempt();
}

AcquireAction AcquireFsm::woken(Clock::time_point) {
  if (phase_ != Phase::sleeping) return {};
  return next_attempt();
}

AcquireAction AcquireFsm::timer_fired(Clock::time_point) {
  switch (phase_) {
    case Phase::sleeping:
    case Phase::pausing:
      return next_attempt();
    case Phase::settle_pause:
      phase_ = Phase::settling;
      return {AcquireAction::settle};
    default:
      return {};
  }
}

AcquireAction AcquireFsm::settle_answered(Clock::time_point, std::optional<bool> acquired) {
  if (phase_ != Phase::settling) return {};
  if (acquired) {
    return *acquired ? finish(AcquireAction::succeed, AcquireAction::Error::none)
                     : finish(AcquireAction::fail, settle_error_);
  }
  // Still unknown: say so rather than "not acquired" (after the last try).
  if (settle_tries_left_ <= 1) return finish(AcquireAction::fail, AcquireAction::Error::unknown);
  --settle_tries_left_;
  return wait(Phase::settle_pause, AcquireAction::pause, s_.retry_interval);
}

AcquireAction AcquireFsm::cancel(Clock::time_point now) {
  if (phase_ == Phase::done || phase_ == Phase::idle || cancelled_) return {};
  cancelled_ = true;
  s_.deadline = s_.deadline ? std::min(*s_.deadline, now) : now;
  switch (phase_) {
    case Phase::sleeping:
    case Phase::pausing:
    case Phase::subscribing:
      return give_up(AcquireAction::Error::none);
    default:
      return {};  // attempting, settling: the answer on its way decides
  }
}

AcquireAction AcquireFsm::grant_heard(Clock::time_point now, GrantNews news,
                                      Duration grant_lease,
                                      std::optional<Clock::time_point> registered_sent,
                                      Duration reply_lag) {
  if (phase_ == Phase::done || phase_ == Phase::idle) return {};
  switch (news) {
    case GrantNews::for_me:
      if (registered_sent && now + reply_lag < *registered_sent + grant_lease / 3) {
        // The release made us the holder: whatever we were doing (sleeping, an attempt in
        // flight, a retry pause, settling an uncertain attempt) is moot. An attempt in
        // flight that reaches the server after the grant takes the grant, never a re-entry.
        return finish(AcquireAction::succeed, AcquireAction::Error::none);
      }
      // Too little of the grant lease is known to be left: ask (the attempt takes it).
      if (phase_ == Phase::sleeping || phase_ == Phase::pausing) return next_attempt();
      if (phase_ == Phase::attempting) grant_pending_ = true;
      return {};
    case GrantNews::for_other: {
      if (phase_ != Phase::sleeping) return {};
      // If the grantee is dead, the lock frees when the grant lease ends, and nobody
      // announces that: be there soon after. Never later than the sleep was to end.
      Duration bound = grant_lease + Duration{grant_lease.count() / 10 + 1};
      if (s_.deadline) bound = std::min(bound, std::chrono::ceil<Duration>(*s_.deadline - now));
      bound = std::max(bound, Duration{0});
      if (sleep_end_ && *sleep_end_ <= now + bound) return {};
      return sleep_from(now, bound);
    }
    case GrantNews::maybe_stale:
      if (phase_ == Phase::attempting) grant_pending_ = true;
      if (phase_ != Phase::sleeping) return {};  // an attempt in flight or due will tell
      return next_attempt();
  }
  return {};
}

}  // namespace redisync::sync
