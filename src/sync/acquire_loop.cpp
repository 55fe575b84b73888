#include "sync/acquire_loop.h"

#include <algorithm>

#include "redisync/errors.h"

namespace redisync::sync {

namespace {
thread_local std::optional<Clock::time_point> deciding_sent;  // see deciding_attempt_sent()
}  // namespace

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

std::optional<Clock::time_point> deadline_after(Duration wait) {
  if (wait < Duration{0}) return std::nullopt;
  const auto now = Clock::now();
  if (wait >= std::chrono::floor<Duration>(Clock::time_point::max() - now)) return std::nullopt;
  return now + wait;
}

bool may_have_run(std::exception_ptr error) {
  if (!error) return false;
  try {
    std::rethrow_exception(error);
  } catch (const ConnectionError& e) {
    return e.maybe_sent();
  } catch (const TimeoutError&) {
    return true;
  } catch (...) {
  }
  return false;
}

void AcquireLoop::start(net::Executor& executor, Params params, Done done) {
  auto loop = std::shared_ptr<AcquireLoop>(
      new AcquireLoop(executor, std::move(params), std::move(done)));
  loop->self_ = loop;
  // A channel this process is subscribed to already (other waiters on it, or lingering after
  // recent ones) is joined before the first attempt, so a release published after that
  // attempt runs is seen here as a wake-up to take. A failed first attempt can then go
  // straight to sleep, instead of subscribing and asking the server once more.
  loop->channel_ = executor.subscriber().join_if_subscribed(loop->params_.channel);
  loop->attempt();
}

AcquireLoop::AcquireLoop(net::Executor& executor, Params params, Done done)
    : executor_(executor), params_(std::move(params)), done_(std::move(done)),
      timer_(executor.io()) {}

void AcquireLoop::attempt() {
  ++round_;
  if (params_.probe) ++params_.probe->attempts;
  auto self = shared_from_this();
  const bool recheck = uncertain_ && params_.recheck;
  auto& fn = recheck ? params_.recheck : params_.attempt;
  // A recheck may find that the uncertain attempt acquired: its (earlier) time stays.
  if (!recheck) attempt_sent_ = Clock::now();
  uncertain_ = false;
  fn([self](std::exception_ptr error, AttemptResult result) { self->on_attempt(error, result); });
}

// True when the error was handled (a retry is scheduled, or the wait ran out and the loop
// finished as "not acquired"); false when it must be reported.
bool AcquireLoop::retry_after_error(std::exception_ptr error) {
  // Server unreachable, restarting or failing over: try again a few times within the wait.
  bool retryable = false;
  bool uncertain = false;
  try {
    std::rethrow_exception(error);
  } catch (const AuthError&) {
  } catch (const ConnectionError& e) {
    retryable = true;
    uncertain = e.maybe_sent();
  } catch (const TimeoutError&) {
    retryable = true;
    uncertain = true;
  } catch (...) {
  }
  if (!retryable) return false;
  Duration pause = params_.retry_interval;
  if (params_.deadline) {
    const auto left = std::chrono::floor<Duration>(*params_.deadline - Clock::now());
    uncertain_ = uncertain_ || uncertain;
    if (left <= Duration{0}) {
      // The wait is over: a timed acquire that could not get through is "not acquired",
      // unless the attempt ran after all (settled first).
      give_up(nullptr);
      return true;
    }
    pause = std::min(pause, left);
  }
  uncertain_ = uncertain_ || uncertain;
  if (failures_ >= params_.retry_attempts) {
    if (!uncertain_ || !params_.settle) return false;
    give_up(error);
    return true;
  }
  ++failures_;
  const auto round = ++round_;
  auto self = shared_from_this();
  timer_.expires_after(pause);
  timer_.async_wait([self, round](std::error_code ec) {
    if (ec || self->finished_ || round != self->round_) return;
    self->attempt();
  });
  return true;
}

void AcquireLoop::on_attempt(std::exception_ptr error, AttemptResult result) {
  if (finished_) return;
  if (error) {
    if (retry_after_error(error)) return;
    if (params_.on_give_up) params_.on_give_up();
    return finish(error, false);
  }
  failures_ = 0;
  if (result.acquired) return finish(nullptr, true);

  const auto now = Clock::now();
  const bool subscribed = channel_ && channel_->subscribed() && !subscribing_;
  const bool wakeup = subscribed && channel_->take_wakeup();
  const NextStep step = decide_next_step(result, now, params_.deadline, subscribed, wakeup);
  switch (step.kind) {
    case NextStep::give_up:
      if (params_.on_give_up) params_.on_give_up();
      return finish(nullptr, false);
    case NextStep::retry_now:
      return attempt();
    case NextStep::subscribe: {
      if (!channel_) channel_ = executor_.subscriber().join(params_.channel, params_.policy);
      subscribing_ = true;
      Duration limit = executor_.subscriber().subscription_timeout();
      if (params_.deadline) {
        limit = std::min(limit, std::chrono::ceil<Duration>(*params_.deadline - now));
      }
      auto self = shared_from_this();
      // Attempt again once the subscription is confirmed: a release published between the
      // first attempt and the subscription would otherwise be missed.
      channel_->when_subscribed(
          [self](std::exception_ptr sub_error) {
            if (self->finished_) return;
            self->subscribing_ = false;
            if (sub_error) {
              // Out of wait time while subscribing is a plain "not acquired".
              if (self->params_.deadline && Clock::now() >= *self->params_.deadline) {
                if (self->params_.on_give_up) self->params_.on_give_up();
                return self->finish(nullptr, false);
              }
              if (self->params_.on_give_up) self->params_.on_give_up();
              return self->finish(sub_error, false);
            }
            self->attempt();
          },
          std::max(limit, Duration{1}));
      return;
    }
    case NextStep::sleep: {
      channel_->sleep(this);
      if (step.sleep_for != Duration::max()) {
        const auto round = round_;
        auto self = shared_from_this();
        timer_.expires_after(step.sleep_for);
        timer_.async_wait([self, round](std::error_code ec) {
          if (ec || self->finished_ || round != self->round_) return;
          self->channel_->cancel(self.get());
          self->attempt();
        });
      }
      return;
    }
  }
}

void AcquireLoop::give_up(std::exception_ptr error) {
  if (uncertain_ && params_.settle) return settle(error, std::max(params_.retry_attempts, 1));
  if (params_.on_give_up) params_.on_give_up();
  finish(error, false);
}

// The last attempt may have run on the server: ask (by owner or request id) before answering
// "no". The caller's deadline is past; an honest answer is worth a few more round trips.
void AcquireLoop::settle(std::exception_ptr error, int tries_left) {
  ++round_;
  auto self = shared_from_this();
  params_.settle([self, error, tries_left](std::exception_ptr check_error, AttemptResult r) {
    if (self->finished_) return;
    if (!check_error) {
      if (r.acquired) return self->finish(nullptr, true);
      if (self->params_.on_give_up) self->params_.on_give_up();
      return self->finish(error, false);
    }
    if (tries_left <= 1) {
      // Still unknown: say so rather than "not acquired". A hold the attempt may have taken
      // ends with its lease (it is not renewed).
      if (self->params_.on_give_up) self->params_.on_give_up();
      return self->finish(
          std::make_exception_ptr(TimeoutError(
              "redisync: could not find out whether an acquire whose reply timed out ran on "
              "the server; if it did, its hold lasts until its lease ends")),
          false);
    }
    const auto round = self->round_;
    self->timer_.expires_after(self->params_.retry_interval);
    self->timer_.async_wait([self, error, tries_left, round](std::error_code ec) {
      if (ec || self->finished_ || round != self->round_) return;
      self->settle(error, tries_left - 1);
    });
  });
}

void AcquireLoop::wake() {
  if (finished_) return;
  if (params_.probe) {
    ++params_.probe->wake_ups;
    params_.probe->last_wake = Clock::now();
  }
  timer_.cancel();
  attempt();
}

void AcquireLoop::finish(std::exception_ptr error, bool acquired) {
  if (finished_) return;
  finished_ = true;
  timer_.cancel();
  if (channel_) {
    channel_->cancel(this);
    executor_.subscriber().leave(channel_);
    channel_.reset();
  }
  auto done = std::move(done_);
  auto keep = std::move(self_);  // released when this function returns
  // Visible to the completion only (I/O thread), restored however it ends.
  const DecidingAttempt deciding(attempt_sent_);
  done(error, acquired);
}

std::optional<Clock::time_point> deciding_attempt_sent() { return deciding_sent; }

DecidingAttempt::DecidingAttempt(Clock::time_point sent) : earlier_(deciding_sent) {
  deciding_sent = sent;
}

DecidingAttempt::~DecidingAttempt() { deciding_sent = earlier_; }

}  // namespace redisync::sync
