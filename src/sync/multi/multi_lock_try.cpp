// SPDX-License-Identifier: Apache-2.0
#include "sync/multi/multi_lock_try.h"

#include <algorithm>
#include <random>
#include <utility>

#include "redisync/async.h"
#include "redisync/errors.h"
#include "sync/acquire/cancel_signal.h"
#include "sync/client_core.h"
#include "sync/multi/multi_lock_outcome.h"
#include "sync/multi/timer_slot.h"

namespace redisync::detail {

namespace {

using Clock = std::chrono::steady_clock;

class Attempt : public std::enable_shared_from_this<Attempt> {
 public:
  Attempt(std::shared_ptr<MultiLockState> state, std::int64_t owner, Duration wait, Duration lease,
          AttemptDone done, std::shared_ptr<MultiCancel> cancel)
      : state_(std::move(state)),
        owner_(owner),
        wait_(wait),
        lease_(lease),
        done_(std::move(done)),
        cancel_(std::move(cancel)) {
    // Spec §6 step 1: watchdog when lease <= 0; else twice the wait while walking (so early
    // members cannot expire before the last is taken), set to exactly `lease` on success.
    if (lease_ > Duration{0}) {
      member_lease_ =
          wait_ > Duration{0} ? std::min(2 * std::min(wait_, max_duration), max_duration) : lease_;
    }
    reports_.resize(state_->members.size());
    for (std::size_t i = 0; i < reports_.size(); ++i) {
      reports_[i].member = state_->members[i]->describe();
    }
  }

  void begin() {
    locked([this] {
      start_ = Clock::now();
      if (cancel_) {
        auto on_request = [weak = weak_from_this()] {
          if (auto self = weak.lock()) self->locked([&] { self->cancel(); });
        };
        if (cancel_->enter(std::move(on_request))) {  // cancelled before this try began
          cancelled_ = true;
          return finish(false);
        }
      }
      begin_pass();
    });
  }

 private:
  // One member's try: the first of (acquire answer, probe error, timer) resolves it.
  struct Step {
    std::size_t index = 0;
    std::uint64_t gen = 0;
    bool resolved = true;
    bool refused = false;  // the acquire answered "not acquired"
    int probe = 0;         // 0 pending, 1 answered, -1 failed
    long long ttl = -2;
    std::exception_ptr probe_error;
    Duration budget{0};
    std::shared_ptr<TimerSlot> timer;
    std::shared_ptr<CancelSignal> cancel;  // the member wait's, when the attempt is cancellable
  };
  enum class Then { finish_failed, restart };

  template <class F>
  void locked(F&& f) {
    std::function<void()> after;
    {
      std::lock_guard lock(mutex_);
      f();
      after = std::move(after_);
      after_ = nullptr;
    }
    if (after) after();
  }

  const std::vector<MemberPtr>& members() const { return state_->members; }
  Duration elapsed() const { return std::chrono::ceil<Duration>(Clock::now() - start_); }
  bool out_of_time() const { return wait_ > Duration{0} && elapsed() >= wait_; }

  void begin_pass() {
    ++passes_;
    pass_error_ = false;
    acquired_.clear();
    failures_left_ = state_->policy.tolerated_failures;
    index_ = 0;
    step();
  }

  // Spec §6 step 2 for member index_.
  void step() {
    const std::size_t count = members().size();
    Duration member_wait{0};
    if (wait_ > Duration{0}) {
      const Duration remaining = std::max(wait_ - elapsed(), Duration{0});
      member_wait = remaining;
      if (state_->policy.split_wait) {
        member_wait = std::max(remaining / static_cast<Duration::rep>(count), Duration{1});
      }
      member_wait = std::min(member_wait, remaining);
    }
    const auto& member = members()[index_];
    step_ = Step{};
    step_.index = index_;
    step_.gen = ++gen_;
    step_.resolved = false;
    step_.budget = member_wait + state_->options.reply_timeout;
    auto self = shared_from_this();
    const auto gen = step_.gen;
    const auto i = index_;
    if (cancel_) step_.cancel = make_cancel_signal(member->core());
    // Each of these posts to the member's I/O thread: no callback runs under our mutex.
    member->acquire(
        owner_, member_lease_, member_wait,
        [self, gen, i](std::exception_ptr e, bool acquired, std::uint64_t lineage) {
          self->locked([&] {
            if (acquired) self->lineages_[i] = lineage;
            self->on_acquire(gen, i, e, acquired);
          });
        },
        step_.cancel);
    member->probe([self, gen](std::exception_ptr e, net::Reply reply) {
      self->locked([&] { self->on_probe(gen, e, reply); });
    });
    step_.timer = TimerSlot::arm(member->core()->io(), step_.budget,
                                 [self, gen] { self->locked([&] { self->on_timer(gen); }); });
  }

  bool current(std::uint64_t gen) const { return gen == step_.gen && !step_.resolved; }

  void resolve() {
    step_.resolved = true;
    if (step_.timer) step_.timer->cancel();
  }

  void set_report(std::size_t i, MemberOutcome outcome, std::string detail) {
    reports_[i].outcome = outcome;
    reports_[i].detail = std::move(detail);
    pass_error_ = pass_error_ || (outcome != MemberOutcome::acquired &&
                                  outcome != MemberOutcome::held_by_another &&
                                  outcome != MemberOutcome::not_attempted);
  }

  void on_acquire(std::uint64_t gen, std::size_t i, std::exception_ptr error, bool acquired) {
    if (!current(gen)) return late_answer(i, error, acquired);
    if (acquired) {
      resolve();
      set_report(i, MemberOutcome::acquired, {});
      acquired_.push_back(i);
      return next();
    }
    if (is_cancelled(error)) {  // the member wait gave up as cancel() asked: nothing taken
      resolve();
      set_report(i, MemberOutcome::not_attempted, "the wait was cancelled");
      return on_failure();
    }
    if (error) {
      resolve();
      std::string detail;
      const MemberOutcome outcome = outcome_of(error, detail);
      set_report(i, outcome, detail);
      if (may_have_taken(error)) members()[i]->undo_possible_hold(owner_);
      return on_failure();
    }
    step_.refused = true;
    if (step_.probe != 0) return refused_and_probed();
    // else: the probe's answer (or the timer) decides how to read this refusal
  }

  void on_probe(std::uint64_t gen, std::exception_ptr error, const net::Reply& reply) {
    if (!current(gen)) return;
    if (error) {
      step_.probe = -1;
      step_.probe_error = error;
    } else {
      step_.probe = 1;
      step_.ttl = reply.is_integer() ? reply.integer : -2;
    }
    // A failed probe fails the member at once (a refused connection must not cost the whole
    // member wait); an acquire still running is then handled as a late answer.
    if (step_.refused || error) refused_and_probed();
  }

  void refused_and_probed() {
    const std::size_t i = step_.index;
    resolve();
    if (step_.probe == 1) {
      set_report(i, MemberOutcome::held_by_another, held_detail(step_.ttl));
    } else {
      std::string detail;
      const MemberOutcome outcome = outcome_of(step_.probe_error, detail);
      set_report(i, outcome, detail);
      // A refusal from an unreachable server may hide an attempt that ran.
      if (step_.refused) members()[i]->undo_possible_hold(owner_);
    }
    on_failure();
  }

  void on_timer(std::uint64_t gen) {
    if (!current(gen)) return;
    const std::size_t i = step_.index;
    resolve();
    set_report(i, MemberOutcome::timed_out,
               "no answer within " + std::to_string(step_.budget.count()) + " ms");
    if (step_.refused) members()[i]->undo_possible_hold(owner_);
    on_failure();
  }

  // The answer of a member whose try was already given up (timed out, probe failed) or of an
  // attempt that has finished: nothing of it may stay behind.
  void late_answer(std::size_t i, std::exception_ptr error, bool acquired) {
    if (acquired) {
      members()[i]->release(owner_, [](ReleaseOutcome, std::exception_ptr) {});
    } else if (!error || (!is_cancelled(error) && may_have_taken(error))) {
      members()[i]->undo_possible_hold(owner_);
    }
  }

  // Spec §6 step 3.
  void on_failure() {
    const std::size_t count = members().size();
    const auto tolerated = static_cast<std::size_t>(state_->policy.tolerated_failures);
    if (count - acquired_.size() == tolerated) return succeed();
    if (cancelled_) return release_taken(Then::finish_failed);  // after_release: cancelled
    if (failures_left_ == 0) {
      const bool retry = wait_ > Duration{0} && !out_of_time();
      return release_taken(retry ? Then::restart : Then::finish_failed);
    }
    --failures_left_;
    next();
  }

  // Spec §6 step 4. Once every member has been tried the walk has succeeded (a hold taken
  // right at the end of the wait is kept rather than released).
  void next() {
    ++index_;
    if (index_ == members().size()) return succeed();
    if (cancelled_ || out_of_time()) return release_taken(Then::finish_failed);
    step();
  }

  // The caller cancelled (MultiCancel::request). A member wait in progress is cancelled (its
  // answer, CancelledError or an acquisition already on its way, then ends the walk, as does
  // no answer within the reply timeout); a pause between walks ends at once; a release under
  // way ends the try when it is done; a success being completed (expiries being set)
  // completes, unless RedLock's validity check then fails it.
  void cancel() {
    if (finished_ || cancelled_) return;
    cancelled_ = true;
    if (!step_.resolved) {
      request_cancel(step_.cancel);
      step_.budget = state_->options.reply_timeout;  // the answer is awaited this long now
      if (step_.timer) step_.timer->cancel();
      auto self = shared_from_this();
      const auto gen = step_.gen;
      step_.timer =
          TimerSlot::arm(members()[step_.index]->core()->io(), state_->options.reply_timeout,
                         [self, gen] { self->locked([&] { self->on_timer(gen); }); });
      return;
    }
    if (pausing_) {
      pausing_ = false;
      ++pause_gen_;
      return finish(false);
    }
  }

  // Releases what this walk took, then finishes or restarts (after a random pause, as the
  // Redlock description recommends, so competing clients do not collide again).
  void release_taken(Then then) {
    then_ = then;
    const auto taken = std::exchange(acquired_, {});
    if (taken.empty()) return after_release();
    releasing_ = taken.size();
    const auto gen = ++release_gen_;
    auto self = shared_from_this();
    for (std::size_t i : taken) {
      reports_[i].detail = "released again: the attempt as a whole failed";
      members()[i]->release(owner_, [self, gen](ReleaseOutcome, std::exception_ptr) {
        self->locked([&] {
          if (gen == self->release_gen_ && self->releasing_ > 0 && --self->releasing_ == 0) {
            self->after_release();
          }
        });
      });
    }
    release_timer_ = TimerSlot::arm(members()[taken.front()]->core()->io(),
                                    state_->options.reply_timeout, [self, gen] {
                                      self->locked([&] {
                                        if (gen != self->release_gen_ || self->releasing_ == 0)
                                          return;
                                        self->releasing_ = 0;
                                        self->after_release();
                                      });
                                    });
  }

  void after_release() {
    ++release_gen_;
    if (release_timer_) release_timer_->cancel();
    if (cancelled_ || then_ == Then::finish_failed || out_of_time()) return finish(false);
    // Random, growing with each walk that failed on an error (capped at 1 s): members that
    // fail fast (a dead server) must not turn the wait into a busy loop. A walk refused by a
    // holder does not grow it: its member wait slept on that member's release already, and a
    // pause that grew with the wait would let the longest waiter sample the lock least often
    // (a RedLock waiter starved for a whole chaos run beside three competitors).
    if (pass_error_) ++failing_passes_;
    const int doublings = std::min(std::max(failing_passes_ - 1, 0), 5);
    const long long pause_ms = std::min(random_between(10, 50) << doublings, 1000LL);
    const Duration pause{std::min<long long>((wait_ - elapsed()).count(), pause_ms)};
    auto self = shared_from_this();
    const auto gen = ++pause_gen_;
    pausing_ = true;
    pause_timer_ = TimerSlot::arm(members().front()->core()->io(), pause, [self, gen] {
      self->locked([&] {
        if (gen != self->pause_gen_ || self->finished_) return;
        self->pausing_ = false;
        if (self->out_of_time()) return self->finish(false);
        self->begin_pass();
      });
    });
  }

  // Spec §6 step 5: with a lease, every held key expires exactly `lease` from now on.
  void succeed() {
    expiry_ok_.assign(acquired_.size(), false);
    if (lease_ <= Duration{0} || acquired_.empty()) return complete_success();
    expiring_ = acquired_.size();
    const auto gen = ++expiry_gen_;
    auto self = shared_from_this();
    for (std::size_t k = 0; k < acquired_.size(); ++k) {
      members()[acquired_[k]]->set_expiry(owner_, lease_, [self, gen, k](bool ok) {
        self->locked([&] {
          if (gen != self->expiry_gen_ || self->expiring_ == 0) return;
          self->expiry_ok_[k] = ok;
          if (--self->expiring_ == 0) self->complete_success();
        });
      });
    }
    expiry_timer_ = TimerSlot::arm(members()[acquired_.front()]->core()->io(),
                                   state_->options.reply_timeout, [self, gen] {
                                     self->locked([&] {
                                       if (gen != self->expiry_gen_ || self->expiring_ == 0) return;
                                       self->expiring_ = 0;
                                       self->complete_success();
                                     });
                                   });
  }

  // The lease each held member is sure to have from the start of the attempt on; validity =
  // that of the required-th best member - elapsed - drift allowance (0.01 x lease + 2 ms).
  Duration validity() const {
    std::vector<Duration> leases;
    for (std::size_t k = 0; k < acquired_.size(); ++k) {
      if (lease_ > Duration{0}) {
        leases.push_back(expiry_ok_[k] ? lease_ : std::min(lease_, member_lease_));
      } else {
        leases.push_back(members()[acquired_[k]]->core()->config().lock_watchdog_timeout);
      }
    }
    std::sort(leases.begin(), leases.end(), std::greater<>());
    const std::size_t need = std::max<std::size_t>(state_->required(), 1);
    if (leases.size() < need) return Duration{0};
    const Duration lease = leases[need - 1];
    const Duration drift = lease / 100 + Duration{2};
    return lease - elapsed() - drift;
  }

  void complete_success() {
    ++expiry_gen_;
    if (expiry_timer_) expiry_timer_->cancel();
    validity_ = validity();
    if (state_->policy.check_validity && validity_ <= Duration{0}) {
      for (std::size_t i : acquired_) {
        reports_[i].detail = "the validity time ran out before the majority was complete";
      }
      const bool retry = wait_ > Duration{0} && !out_of_time();
      return release_taken(retry ? Then::restart : Then::finish_failed);
    }
    finish(true);
  }

  // Completes the try; a cancelled one that did not acquire with CancelledError.
  void finish(bool acquired) {
    if (finished_) return;
    finished_ = true;
    ++pause_gen_;
    if (pause_timer_) pause_timer_->cancel();
    std::exception_ptr error;
    if (cancelled_ && !acquired) {
      error = detail::cancelled_error(state_->name() + " was acquired",
                                      "the members it had taken were released");
    }
    AttemptReport report;
    report.acquired = acquired;
    report.validity = acquired ? validity_ : Duration{0};
    report.elapsed = elapsed();
    report.passes = passes_;
    report.members = reports_;
    {
      std::lock_guard lock(state_->mutex);
      state_->last = report;
      if (acquired) {
        auto& holds = state_->holds[owner_];
        if (holds.empty()) state_->held_since[owner_] = Clock::now();
        MultiLockState::Held held{acquired_, {}};
        for (std::size_t i : acquired_) held.lineages.push_back(lineages_[i]);
        holds.push_back(std::move(held));
      }
    }
    after_ = [done = std::move(done_), error, report = std::move(report)] { done(error, report); };
  }

  std::shared_ptr<MultiLockState> state_;
  const std::int64_t owner_;
  const Duration wait_;
  const Duration lease_;
  Duration member_lease_{0};
  AttemptDone done_;
  const std::shared_ptr<MultiCancel> cancel_;  // nullptr: not cancellable

  std::mutex mutex_;             // guards everything below
  std::function<void()> after_;  // the completion, run once the mutex is released
  Clock::time_point start_{};
  int passes_ = 0;
  int failing_passes_ = 0;  // walks that failed on an error (they grow the pause)
  bool pass_error_ = false;  // the walk under way had a member fail on an error
  std::size_t index_ = 0;
  int failures_left_ = 0;
  std::vector<std::size_t> acquired_;
  /// Per member, the lineage of the owner's hold its latest acquisition joined.
  std::map<std::size_t, std::uint64_t> lineages_;
  std::vector<MemberReport> reports_;
  Step step_;
  std::uint64_t gen_ = 0;
  Then then_ = Then::finish_failed;
  std::size_t releasing_ = 0;
  std::uint64_t release_gen_ = 0;
  std::shared_ptr<TimerSlot> release_timer_;
  std::uint64_t pause_gen_ = 0;
  std::shared_ptr<TimerSlot> pause_timer_;
  bool pausing_ = false;    // between walks, the pause timer armed
  bool cancelled_ = false;  // cancel() was called
  std::vector<bool> expiry_ok_;
  std::size_t expiring_ = 0;
  std::uint64_t expiry_gen_ = 0;
  std::shared_ptr<TimerSlot> expiry_timer_;
  Duration validity_{0};
  bool finished_ = false;
};

}  // namespace

long long random_between(long long low, long long high) {
  if (high <= low) return low;
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_int_distribution<long long>(low, high - 1)(rng);
}

void MultiCancel::request() {
  std::function<void()> on_request;
  {
    std::lock_guard lock(mutex_);
    requested_ = true;
    on_request = std::move(on_request_);
    on_request_ = nullptr;
  }
  if (on_request) on_request();
}

bool MultiCancel::enter(std::function<void()> on_request) {
  std::lock_guard lock(mutex_);
  if (requested_) return true;
  on_request_ = std::move(on_request);
  return false;
}

void run_multi_try(const std::shared_ptr<MultiLockState>& state, std::int64_t owner, Duration wait,
                   Duration lease, AttemptDone done, std::shared_ptr<MultiCancel> cancel) {
  std::make_shared<Attempt>(state, owner, wait, lease, std::move(done), std::move(cancel))->begin();
}

}  // namespace redisync::detail
