// SPDX-License-Identifier: Apache-2.0
#include "sync/acquire/acquire_loop.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "log_line.h"
#include "redisync/errors.h"
#include "sync/acquire/cancel_signal.h"
#include "sync/trace_points.h"

namespace redisync::sync {

std::optional<Clock::time_point> deadline_after(Duration wait) {
  if (wait < Duration{0}) return std::nullopt;
  const auto now = Clock::now();
  if (wait >= std::chrono::floor<Duration>(Clock::time_point::max() - now)) return std::nullopt;
  return now + wait;
}

namespace {

// Without a subscription no message can wake a waiter: it attempts this often instead.
constexpr Duration kPollWithoutSubscription{100};

// Only failures known to be passing (a dropped connection, a timeout) are retried; the rest
// (a server error, refused credentials, a closed client, a bad reply) are reported as they are.
AttemptError classify(std::exception_ptr error) {
  switch (failure_kind(error)) {
    case FailureKind::dropped_before_send:
      return AttemptError::retry;
    case FailureKind::dropped_after_send:
    case FailureKind::timed_out:
      return AttemptError::retry_uncertain;
    default:
      return AttemptError::fatal;
  }
}

AcquireFsm::Settings settings_of(AcquireLoop::Params& p, const AcquireSteps& steps,
                                 net::Executor& executor) {
  AcquireFsm::Settings s;
  s.deadline = p.deadline;
  s.retry_attempts = p.retry_attempts;
  s.retry_interval = p.retry_interval;
  s.can_recheck = steps.can_recheck();
  s.can_settle = steps.can_settle();
  s.subscription_timeout = executor.subscriber().subscription_timeout();
  s.poll_interval = kPollWithoutSubscription;
  s.spin = std::move(p.spin);
  return s;
}

void warn_polling_once(const Config& config, const std::string& channel,
                       std::exception_ptr error) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  detail::log_line(config, "could not subscribe to " + channel + " (" + failure_text(error) +
                               "); waiters poll every " +
                               std::to_string(kPollWithoutSubscription.count()) +
                               " ms instead (said once per process)");
}

}  // namespace

void AcquireLoop::start(net::Executor& executor, Params params, Done done) {
  auto loop = std::make_shared<AcquireLoop>(Key{}, executor, std::move(params), std::move(done));
  loop->self_ = loop;
  // A channel this process is subscribed to already (other waiters on it, or lingering after
  // recent ones) is joined before the first attempt, so a release published after that
  // attempt runs is seen here as a wake-up to take. A failed first attempt can then go
  // straight to sleep, instead of subscribing and asking the server once more.
  if (!loop->fsm_.polling()) {
    loop->channel_ = executor.subscriber().join_if_subscribed(loop->steps_->channel());
  }
  if (auto& g = loop->grant_) {
    // Listed first, then subscribed: no attempt registers before both hold (next_attempt).
    // Joined now only if subscribed already (lingering); otherwise with the lock channel
    // (subscribe()), so an acquire that finds the lock free subscribes to nothing.
    g->listed = g->registry->add(g, loop.get());
    if (g->listed) g->joined = executor.subscriber().join_if_subscribed(g->channel);
  }
  loop->apply(loop->fsm_.start());
  if (loop->cancel_ && !loop->finished_) {
    std::weak_ptr<AcquireLoop> weak = loop;
    loop->cancel_->attach([weak] {
      if (auto live = weak.lock()) live->cancel();
    });
  }
}

AcquireLoop::AcquireLoop(Key, net::Executor& executor, Params params, Done done)
    : executor_(executor),
      steps_(std::move(params.steps)),
      policy_(params.policy),
      probe_(std::move(params.probe)),
      grant_(std::move(params.grant)),
      cancel_(std::move(params.cancel)),
      done_(std::move(done)),
      fsm_(settings_of(params, *steps_, executor)),
      timer_(executor.io()) {}

void AcquireLoop::apply(AcquireAction action) {
  if (finished_) return;
  switch (action.kind) {
    case AcquireAction::none:
      return;
    case AcquireAction::attempt:
    case AcquireAction::recheck:
    case AcquireAction::settle:
      return send(action.kind);
    case AcquireAction::subscribe:
      return subscribe(action.bound);
    case AcquireAction::sleep:
      channel_->sleep(this);
      if (action.bound != Duration::max()) arm_timer(action.bound);
      return;
    case AcquireAction::pause:
      return arm_timer(action.bound);
    case AcquireAction::succeed:
      return finish(nullptr, true);
    case AcquireAction::fail: {
      steps_->give_up();
      std::exception_ptr error;
      if (action.error == AcquireAction::Error::attempt) error = last_error_;
      if (action.error == AcquireAction::Error::cancelled) {
        error = detail::cancelled_error(
            "it succeeded", "nothing was acquired, and nothing of it is left on the server");
      }
      if (action.error == AcquireAction::Error::unknown) {
        // A hold the attempt may have taken ends with its lease (it is not renewed).
        error = std::make_exception_ptr(TimeoutError(
            "redisync: could not find out whether an acquire whose reply timed out ran on "
            "the server; if it did, its hold lasts until its lease ends"));
      }
      return finish(error, false);
    }
  }
}

void AcquireLoop::send(AcquireAction::Kind kind) {
  ++round_;
  auto self = shared_from_this();
  if (kind == AcquireAction::settle) {
    steps_->settle([self](std::exception_ptr check_error, AttemptResult r) {
      if (self->finished_) return;
      std::optional<bool> acquired;
      if (!check_error) acquired = r.acquired;
      if (!check_error) self->note_found_grant(r);
      self->apply(self->fsm_.settle_answered(Clock::now(), acquired));
    });
    return;
  }
  if (probe_) ++probe_->attempts;
  // A recheck may find that the uncertain attempt acquired: its (earlier) time stays.
  if (kind == AcquireAction::attempt) attempt_sent_ = Clock::now();
  const bool after_wake = std::exchange(woken_, false);
  auto answered = [self, after_wake](std::exception_ptr error, AttemptResult result) {
    if (self->finished_) return;
    const auto now = Clock::now();
    if (error) {
      self->last_error_ = error;
      return self->apply(self->fsm_.attempt_failed(now, classify(error)));
    }
    self->note_found_grant(result);
    auto& ch = self->channel_;
    if (!result.acquired && after_wake) self->contended_ = true;
    // Polling costs a request per interval per waiter: only where a message may miss it.
    if (result.shared_poll_ms >= 0 && ch && (self->contended_ || ch->references() > 1)) {
      result.ttl_ms = result.ttl_ms < 0 ? result.shared_poll_ms
                                        : std::min(result.ttl_ms, result.shared_poll_ms);
    }
    const bool subscribed = ch && ch->subscribed() && !self->subscribing_;
    const bool wakeup = subscribed && ch->take_wakeup();
    if (wakeup) self->woken_ = true;
    self->apply(self->fsm_.attempt_answered(now, result, subscribed, wakeup));
  };
  if (kind == AcquireAction::recheck) return steps_->recheck(std::move(answered));
  steps_->attempt(std::move(answered));
}

void AcquireLoop::subscribe(Duration limit) {
  if (auto& g = grant_; g && g->listed && !g->joined) {
    g->joined = executor_.subscriber().join(g->channel, g->registry->policy());
  }
  if (!channel_) channel_ = executor_.subscriber().join(steps_->channel(), policy_);
  subscribing_ = true;
  auto self = shared_from_this();
  // Attempt again once the subscription is confirmed: a release published between the
  // first attempt and the subscription would otherwise be missed.
  auto proceed = [self](std::exception_ptr sub_error) {
    if (self->finished_) return;
    self->subscribing_ = false;
    auto action = self->fsm_.subscription_done(Clock::now(), !sub_error);
    if (self->fsm_.polling()) {
      warn_polling_once(self->executor_.config(), self->steps_->channel(), sub_error);
      self->leave_channel();
    }
    self->apply(action);
  };
  channel_->when_subscribed(
      [self, proceed, limit](std::exception_ptr sub_error) {
        if (self->finished_) return;
        // Grant mode: the attempt that follows registers only once the grant channel is
        // confirmed too (the two confirmations come in either order). Its failure only
        // means no grants for this acquisition: the lock channel's result decides.
        auto& g = self->grant_;
        if (!sub_error && g && g->joined && !g->joined->subscribed()) {
          return g->joined->when_subscribed(
              [proceed](std::exception_ptr) { proceed(nullptr); }, limit);
        }
        proceed(sub_error);
      },
      limit);
}

void AcquireLoop::arm_timer(Duration bound) {
  const auto round = round_;
  auto self = shared_from_this();
  timer_.expires_after(bound);
  timer_.async_wait([self, round](std::error_code ec) {
    if (ec || self->finished_ || round != self->round_) return;
    if (self->channel_) self->channel_->cancel(self.get());
    self->apply(self->fsm_.timer_fired(Clock::now()));
  });
}

void AcquireLoop::wake() {
  if (finished_) return;
  if (probe_) {
    ++probe_->wake_ups;
    probe_->last_wake = Clock::now();
  }
  timer_.cancel();
  woken_ = true;
  apply(fsm_.woken(Clock::now()));
}

void AcquireLoop::grant_news(GrantNews news, const GrantMessage& message) {
  if (finished_) return;
  // With replicas that must acknowledge lock writes (docs/wire-format.md §1.7), a grant is
  // taken by an attempt (reply -3), whose WAIT makes sure a replica has the hold (and which is
  // undone and retried otherwise), never on the message alone: the releaser's WAIT may have
  // failed, and a failover would then lose the grant while its grantee believed it held.
  if (news == GrantNews::for_me && executor_.config().check_lock_synced_slaves &&
      executor_.replicas() > 0) {
    news = GrantNews::maybe_stale;
  }
  // The grant was made after the attempt whose registration it used was sent, and after the
  // heartbeat answered before its message; a grant for an attempt that a later refused one
  // outdates is gone (sync/acquire/grant.h): attempt instead.
  std::optional<Clock::time_point> made_after;
  if (news == GrantNews::for_me) {
    made_after = grant_->grant_made_after(message);
    if (!made_after) news = GrantNews::maybe_stale;
  }
  // The grant lease is the releaser's (its message says it); our own setting only where the
  // message does not (a grant to someone else, which bounds a sleep and nothing more).
  const Duration lease = message.grant_lease.value_or(grant_->grant_lease);
  const auto now = Clock::now();
  auto action = fsm_.grant_heard(now, news, lease, made_after, executor_.reply_lag(now));
  if (action.kind == AcquireAction::none) return;
  if (action.kind != AcquireAction::sleep) {
    timer_.cancel();
    if (channel_) channel_->cancel(this);
  }
  if (news == GrantNews::for_me && action.kind == AcquireAction::succeed) {
    REDISYNC_TRACE_POINT("grant");
    by_grant_ = std::make_unique<Granted>(Granted{lease, *made_after, grant_->id});
    if (grant_->on_grant) grant_->on_grant(message.rest);
  }
  apply(action);
}

void AcquireLoop::note_found_grant(const AttemptResult& result) {
  if (result.acquired && result.found) found_ = result.found;
  if (!result.acquired || !result.grant) return;
  // The hold is a grant not taken yet: it completes the acquisition as its message would have
  // (its lease what the step read, counted from the step's send; the extension follows).
  // The extension ends the grant mark when it names this acquisition's id.
  std::string id = grant_ ? grant_->id : std::string();
  by_grant_ = std::make_unique<Granted>(
      Granted{result.grant->lease, result.grant->read_sent, std::move(id)});
}

void AcquireLoop::cancel() {
  if (finished_) return;
  auto action = fsm_.cancel(Clock::now());
  if (action.kind == AcquireAction::none) return;  // an attempt or settle step in flight decides
  timer_.cancel();
  if (channel_) channel_->cancel(this);
  apply(action);
}

void AcquireLoop::leave_channel() {
  if (!channel_) return;
  channel_->cancel(this);
  executor_.subscriber().leave(channel_);
  channel_.reset();
}

void AcquireLoop::finish(std::exception_ptr error, bool acquired) {
  if (finished_) return;
  finished_ = true;
  timer_.cancel();
  leave_channel();
  if (cancel_) cancel_->detach();
  if (auto& g = grant_; g && g->listed) {
    // A give-up's step (the kind's give_up(), sent already) answers the registry later.
    if (acquired) {
      g->registry->remove(*g);
    } else {
      g->registry->giving_up(*g);
    }
  }
  if (grant_ && grant_->joined) {
    executor_.subscriber().leave(grant_->joined);
    grant_->joined.reset();
  }
  AcquireOutcome outcome;
  if (acquired) {
    outcome.acquired = true;
    outcome.sent = attempt_sent_;
    if (by_grant_) {
      // The grant lease on the server counts from no earlier than the grant was made.
      outcome.sent = by_grant_->made_after;
      outcome.grant = GrantTaken{by_grant_->lease, by_grant_->id};
    } else {
      outcome.found = found_;
    }
  }
  auto done = std::move(done_);
  auto keep = std::move(self_);  // released when this function returns
  REDISYNC_TRACE_POINT("finish");
  done(error, outcome);
}

}  // namespace redisync::sync
