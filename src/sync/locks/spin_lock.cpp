// SPDX-License-Identifier: Apache-2.0
// redisync::SpinLock: Redisson's spin lock (docs/wire-format.md §10).
#include "redisync/spin_lock.h"

#include <algorithm>

#include "lua/scripts.h"
#include "sync/acquire/cancel_signal.h"
#include "sync/acquire/spin_backoff.h"
#include "sync/locks/hold_count_steps.h"
#include "sync/locks/lock_kind.h"

namespace redisync {

void SpinBackoff::validate() const {
  auto fail = [](const std::string& what) {
    throw InvalidArgument("redisync: spin lock backoff: " + what);
  };
  // Each sleep is a timer: within max_duration, as every other duration (config.h).
  const auto at_most_max = [&](Duration d, const char* field) {
    if (d > max_duration) {
      fail(std::string(field) + " must be <= " + std::to_string(max_duration.count()) +
           " ms (redisync::max_duration; got " + std::to_string(d.count()) + " ms)");
    }
  };
  if (kind == Kind::constant) {
    if (delay <= Duration{0}) fail("delay must be > 0");
    at_most_max(delay, "delay");
    return;
  }
  if (first <= Duration{0}) fail("first must be > 0");
  at_most_max(first, "first");
  if (cap < first) fail("cap must be >= first");
  at_most_max(cap, "cap");
  if (multiplier < 1) fail("multiplier must be >= 1");
}

namespace sync {

BackoffSequence::BackoffSequence(const SpinBackoff& settings, std::uint64_t seed)
    : settings_(settings), rng_(seed) {}

Duration BackoffSequence::next() {
  Duration sleep = settings_.delay;
  if (settings_.kind == SpinBackoff::Kind::exponential) {
    if (sleeps_ == 0) {
      sleep = settings_.first;
    } else if (previous_ >= settings_.cap || previous_ > settings_.cap / settings_.multiplier) {
      sleep = settings_.cap;  // previous * multiplier would pass the cap (or overflow)
    } else {
      // After the k-th sleep: previous * multiplier + a random integer in [0, k).
      std::uniform_int_distribution<long long> jitter(0, sleeps_ - 1);
      sleep = std::min(settings_.cap, previous_ * settings_.multiplier + Duration{jitter(rng_)});
    }
  }
  ++sleeps_;
  previous_ = sleep;
  return sleep;
}

void SpinLoop::start(asio::io_context& io, std::optional<Clock::time_point> deadline,
                     std::shared_ptr<AcquireSteps> steps, BackoffSequence backoff,
                     AcquireLoop::Done done, SpinSettle settle,
                     std::shared_ptr<detail::CancelSignal> cancel,
                     std::shared_ptr<AcquireProbe> probe) {
  std::shared_ptr<SpinLoop> loop(
      new SpinLoop(io, deadline, std::move(steps), std::move(backoff), std::move(done)));
  loop->settle_ = settle;
  loop->cancel_ = std::move(cancel);
  loop->probe_ = std::move(probe);
  loop->attempt();
  if (loop->cancel_) {
    std::weak_ptr<SpinLoop> weak = loop;
    loop->cancel_->attach([weak] {
      if (auto live = weak.lock()) live->cancel();
    });
  }
}

void SpinLoop::cancel() {
  if (finished_ || cancelled_) return;
  cancelled_ = true;
  deadline_ = deadline_ ? std::min(*deadline_, Clock::now()) : Clock::now();
  timer_.cancel();  // asleep: ends now; an attempt in flight decides when it answers
}

std::exception_ptr SpinLoop::gave_up() const {
  if (!cancelled_) return nullptr;
  return detail::cancelled_error("the spin lock was acquired", "nothing was acquired");
}

void SpinLoop::finish(std::exception_ptr error, bool acquired, std::optional<GrantFound> found) {
  if (finished_) return;
  finished_ = true;
  if (cancel_) cancel_->detach();
  AcquireOutcome outcome;
  if (acquired) {
    outcome.acquired = true;
    outcome.sent = attempt_sent_;
    outcome.found = found;
  }
  done_(std::move(error), outcome);
}

SpinLoop::SpinLoop(asio::io_context& io, std::optional<Clock::time_point> deadline,
                   std::shared_ptr<AcquireSteps> steps, BackoffSequence backoff,
                   AcquireLoop::Done done)
    : timer_(io),
      deadline_(deadline),
      steps_(std::move(steps)),
      backoff_(std::move(backoff)),
      done_(std::move(done)) {}

void SpinLoop::attempt() {
  // The pending callback (attempt in flight, or timer) keeps the loop alive.
  attempt_sent_ = Clock::now();
  if (probe_) ++probe_->attempts;
  steps_->attempt([self = shared_from_this()](std::exception_ptr error, AttemptResult result) {
    self->on_attempt(error, result);
  });
}

void SpinLoop::on_attempt(std::exception_ptr error, const AttemptResult& result) {
  if (error && steps_->can_settle() && may_have_run(error)) return settle(error, settle_.tries);
  if (error || result.acquired) return finish(error, !error);
  Duration sleep = backoff_.next();
  if (deadline_) {
    const auto now = Clock::now();
    if (now >= *deadline_) return finish(gave_up(), false);
    sleep = std::min(sleep, std::chrono::ceil<Duration>(*deadline_ - now));
  }
  timer_.expires_after(sleep);
  timer_.async_wait([self = shared_from_this()](std::error_code ec) {
    // Cancelled: the Client is shutting down, or the caller cancelled the wait.
    if (ec) return self->finish(self->gave_up(), false);
    self->attempt();
  });
}

// The attempt's reply was lost but it may have run: ask before reporting the error, so a
// hold it took is reported as acquired (issue 22 item 1).
void SpinLoop::settle(std::exception_ptr error, int tries_left) {
  steps_->settle([self = shared_from_this(), error, tries_left](std::exception_ptr check_error,
                                                                AttemptResult r) {
    if (!check_error) {
      // Found acquired: the hold counts from the send of the attempt whose reply was lost,
      // but it may be an earlier acquisition's: no later than what was read.
      return self->finish(r.acquired ? nullptr : error, r.acquired, r.found);
    }
    if (tries_left <= 1) return self->finish(error, false);
    self->timer_.expires_after(self->settle_.interval);
    self->timer_.async_wait([self, error, tries_left](std::error_code ec) {
      if (ec) return self->finish(error, false);
      self->settle(error, tries_left - 1);
    });
  });
}

}  // namespace sync

namespace {

std::uint64_t random_seed() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

class SpinKind final : public detail::LockKind {
 public:
  explicit SpinKind(const SpinBackoff& backoff) : backoff_(backoff) {}

  std::string noun() const override { return "spin lock"; }

  void start_loop(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  std::int64_t owner, detail::LoopStart start) const override {
    sync::SpinLoop::start(
        core->io(), start.deadline,
        detail::spin_lock_steps(core, shared_from_this(), name, owner, start.lease),
        sync::BackoffSequence(backoff_, random_seed()), std::move(start.done),
        {std::max(core->config().retry_attempts, 1), core->config().retry_interval},
        std::move(start.cancel), std::move(start.probe));
  }

  void release_step(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                    const detail::HoldRef& hold, Duration lease, const std::string& record,
                    net::ReplyHandler handler) const override {
    detail::hash_release_step(core, name, hold, lease, record, false, std::move(handler));
  }

  void force_step(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  net::ReplyHandler handler) const override {
    detail::hash_force_step(core, name, false, std::move(handler));
  }

 private:
  SpinBackoff backoff_;
};

SpinBackoff validated(const SpinBackoff& b) {
  b.validate();
  return b;
}

}  // namespace

SpinLock::SpinLock(std::shared_ptr<detail::ClientCore> core, std::string name,
                   const Backoff& backoff)
    : BasicLock(std::move(core), std::move(name),
                std::make_shared<const SpinKind>(validated(backoff))),
      backoff_(backoff) {}

}  // namespace redisync
