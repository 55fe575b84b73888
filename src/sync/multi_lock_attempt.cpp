#include "sync/multi_lock_attempt.h"

#include <algorithm>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <optional>
#include <random>

#include "sync/client_core.h"
#include "sync/metrics_report.h"

namespace redisync::detail {

namespace {

using Clock = std::chrono::steady_clock;

// A one-shot timer on some Client's I/O thread that any thread may cancel. The timer object
// is only touched on that thread; it lives as long as its pending wait.
class TimerSlot {
 public:
  static std::shared_ptr<TimerSlot> arm(asio::io_context& io, Duration delay,
                                        std::function<void()> fn) {
    auto slot = std::make_shared<TimerSlot>();
    asio::post(io, [slot, &io, delay, fn = std::move(fn)] {
      std::lock_guard lock(slot->mutex_);
      if (slot->cancelled_) return;
      auto timer = std::make_shared<asio::steady_timer>(io, delay);
      slot->timer_ = timer;
      slot->io_ = &io;
      timer->async_wait([timer, fn](std::error_code ec) {
        if (!ec) fn();
      });
    });
    return slot;
  }

  void cancel() {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    if (auto timer = timer_.lock()) asio::post(*io_, [timer] { timer->cancel(); });
  }

 private:
  std::mutex mutex_;
  bool cancelled_ = false;
  std::weak_ptr<asio::steady_timer> timer_;
  asio::io_context* io_ = nullptr;
};

long long random_between(long long low, long long high) {  // [low, high)
  if (high <= low) return low;
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_int_distribution<long long>(low, high - 1)(rng);
}

// May an acquire that failed with `error` have run on the server anyway?
bool may_have_run(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const ServerError&) {
    return false;
  } catch (const AuthError&) {
    return false;
  } catch (const ConnectionError& e) {
    return e.maybe_sent();
  } catch (...) {
    return true;  // timeouts, a closed client: unknown
  }
}

MemberOutcome outcome_of(std::exception_ptr error, std::string& detail) {
  try {
    std::rethrow_exception(error);
  } catch (const TimeoutError& e) {
    detail = e.what();
    return MemberOutcome::timed_out;
  } catch (const ConnectionError& e) {
    detail = e.what();
    return MemberOutcome::unreachable;
  } catch (const ClientClosedError& e) {
    detail = e.what();
    return MemberOutcome::unreachable;
  } catch (const std::exception& e) {
    detail = e.what();
    return MemberOutcome::error;
  } catch (...) {
    detail = "unknown error";
    return MemberOutcome::error;
  }
}

std::string held_detail(long long ttl) {
  if (ttl >= 0) return "remaining lease " + std::to_string(ttl) + " ms when tried";
  if (ttl == -1) return "held without expiry";
  return "not acquired; the lock was free when checked (taken and released meanwhile)";
}

class Attempt : public std::enable_shared_from_this<Attempt> {
 public:
  Attempt(std::shared_ptr<MultiLockState> state, std::int64_t owner, Duration wait, Duration lease,
          AttemptDone done)
      : state_(std::move(state)),
        owner_(owner),
        wait_(wait),
        lease_(lease),
        done_(std::move(done)) {
    // Spec §6 step 1: watchdog when lease <= 0; else twice the wait while walking (so early
    // members cannot expire before the last is taken), set to exactly `lease` on success.
    if (lease_ > Duration{0}) {
      member_lease_ = wait_ > Duration{0} ? std::min(2 * std::min(wait_, max_duration), max_duration) : lease_;
    }
    reports_.resize(state_->members.size());
    for (std::size_t i = 0; i < reports_.size(); ++i) {
      reports_[i].member = state_->members[i]->describe();
    }
  }

  void begin() {
    locked([this] {
      start_ = Clock::now();
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
    // Each of these posts to the member's I/O thread: no callback runs under our mutex.
    member->acquire(owner_, member_lease_, member_wait,
                    [self, gen, i](std::exception_ptr e, bool acquired) {
                      self->locked([&] { self->on_acquire(gen, i, e, acquired); });
                    });
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
  }

  void on_acquire(std::uint64_t gen, std::size_t i, std::exception_ptr error, bool acquired) {
    if (!current(gen)) return late_answer(i, error, acquired);
    if (acquired) {
      resolve();
      set_report(i, MemberOutcome::acquired, {});
      acquired_.push_back(i);
      return next();
    }
    if (error) {
      resolve();
      std::string detail;
      const MemberOutcome outcome = outcome_of(error, detail);
      set_report(i, outcome, detail);
      if (may_have_run(error)) members()[i]->undo_possible_hold(owner_);
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
    } else if (!error || may_have_run(error)) {
      members()[i]->undo_possible_hold(owner_);
    }
  }

  // Spec §6 step 3.
  void on_failure() {
    const std::size_t count = members().size();
    const auto tolerated = static_cast<std::size_t>(state_->policy.tolerated_failures);
    if (count - acquired_.size() == tolerated) return succeed();
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
    if (out_of_time()) return release_taken(Then::finish_failed);
    step();
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
    if (then_ == Then::finish_failed || out_of_time()) return finish(false);
    // Random, growing with each failed walk (capped at 1 s): members that fail fast (a dead
    // server) must not turn the wait into a busy loop.
    const int doublings = std::min(passes_ - 1, 5);
    const long long pause_ms = std::min(random_between(10, 50) << doublings, 1000LL);
    const Duration pause{std::min<long long>((wait_ - elapsed()).count(), pause_ms)};
    auto self = shared_from_this();
    const auto gen = ++pause_gen_;
    pause_timer_ = TimerSlot::arm(members().front()->core()->io(), pause, [self, gen] {
      self->locked([&] {
        if (gen != self->pause_gen_ || self->finished_) return;
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

  void finish(bool acquired) {
    if (finished_) return;
    finished_ = true;
    ++pause_gen_;
    if (pause_timer_) pause_timer_->cancel();
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
        holds.push_back(acquired_);
      }
    }
    after_ = [done = std::move(done_), report = std::move(report)] { done(nullptr, report); };
  }

  std::shared_ptr<MultiLockState> state_;
  const std::int64_t owner_;
  const Duration wait_;
  const Duration lease_;
  Duration member_lease_{0};
  AttemptDone done_;

  std::mutex mutex_;             // guards everything below
  std::function<void()> after_;  // the completion, run once the mutex is released
  Clock::time_point start_{};
  int passes_ = 0;
  std::size_t index_ = 0;
  int failures_left_ = 0;
  std::vector<std::size_t> acquired_;
  std::vector<MemberReport> reports_;
  Step step_;
  std::uint64_t gen_ = 0;
  Then then_ = Then::finish_failed;
  std::size_t releasing_ = 0;
  std::uint64_t release_gen_ = 0;
  std::shared_ptr<TimerSlot> release_timer_;
  std::uint64_t pause_gen_ = 0;
  std::shared_ptr<TimerSlot> pause_timer_;
  std::vector<bool> expiry_ok_;
  std::size_t expiring_ = 0;
  std::uint64_t expiry_gen_ = 0;
  std::shared_ptr<TimerSlot> expiry_timer_;
  Duration validity_{0};
  bool finished_ = false;
};

void run_multi_try(const std::shared_ptr<MultiLockState>& state, std::int64_t owner, Duration wait,
                   Duration lease, AttemptDone done) {
  std::make_shared<Attempt>(state, owner, wait, lease, std::move(done))->begin();
}

// A meter of one acquisition of the multi-lock as a whole (nullptr without a hook).
std::shared_ptr<AcquireMeter> multi_meter(const MultiLockState& state) {
  if (!state.metrics()) return nullptr;
  return start_acquire_meter(*state.members.front()->core(), state.metrics_kind(), state.name());
}

// Blocking "lock" (docs/wire-format.md §6): tries with an internal wait until acquired.
class LockLoop : public std::enable_shared_from_this<LockLoop> {
 public:
  LockLoop(std::shared_ptr<MultiLockState> state, std::int64_t owner, Duration lease,
           std::function<void(std::exception_ptr)> done, std::shared_ptr<sync::AcquireProbe> probe)
      : state_(std::move(state)),
        owner_(owner),
        lease_(lease),
        done_(std::move(done)),
        probe_(std::move(probe)) {}

  void run() {
    const long long base = static_cast<long long>(state_->members.size()) * 1500;
    long long wait = base;
    const long long lease = lease_.count();
    if (lease > 0)
      wait = lease <= base ? random_between(lease / 2, lease) : random_between(base, lease);
    auto self = shared_from_this();
    run_multi_try(state_, owner_, Duration{std::max(wait, 1LL)}, lease_,
                  [self](std::exception_ptr error, AttemptReport report) {
                    if (self->probe_) self->probe_->attempts += report.passes;
                    if (error) return self->done_(error);
                    if (report.acquired) return self->done_(nullptr);
                    if (report.failed() > self->state_->policy.tolerated_failures) {
                      return self->done_(std::make_exception_ptr(self->error(report)));
                    }
                    self->run();
                  });
  }

 private:
  MultiLockError error(const AttemptReport& report) const {
    std::string what =
        "redisync: could not acquire " +
        std::string(state_->policy.tolerant ? "RedLock" : "multi-lock") + ": " +
        std::to_string(report.failed()) + " of " + std::to_string(report.members.size()) +
        " members unreachable or failing (tolerated: " +
        std::to_string(state_->policy.tolerated_failures) + ")\n" + report.describe();
    return MultiLockError(what, report);
  }

  std::shared_ptr<MultiLockState> state_;
  std::int64_t owner_;
  Duration lease_;
  std::function<void(std::exception_ptr)> done_;
  std::shared_ptr<sync::AcquireProbe> probe_;  // counts walks, with a Metrics hook
};

// Collects the answers of several member operations; calls `finish` once, without its mutex.
template <class T>
class Gather : public std::enable_shared_from_this<Gather<T>> {
 public:
  using Finish = std::function<void(std::vector<T>&, std::vector<std::exception_ptr>&)>;
  Gather(std::size_t n, T initial, Finish finish)
      : values_(n, initial),
        errors_(n),
        answered_(n, false),
        left_(n),
        finish_(std::move(finish)) {}

  void set(std::size_t k, std::exception_ptr error, T value) {
    Finish finish;
    {
      std::lock_guard lock(mutex_);
      if (left_ == 0 || answered_[k]) return;
      answered_[k] = true;
      values_[k] = std::move(value);
      errors_[k] = error;
      if (--left_ == 0) finish = std::move(finish_);
    }
    if (finish) finish(values_, errors_);
  }
  /// Ends the wait: members that have not answered keep `initial` and the given error.
  void expire(std::exception_ptr error) {
    Finish finish;
    {
      std::lock_guard lock(mutex_);
      if (left_ == 0) return;
      for (std::size_t k = 0; k < answered_.size(); ++k) {
        if (!answered_[k]) errors_[k] = error;
      }
      left_ = 0;
      finish = std::move(finish_);
    }
    if (finish) finish(values_, errors_);
  }

 private:
  std::mutex mutex_;
  std::vector<T> values_;
  std::vector<std::exception_ptr> errors_;
  std::vector<bool> answered_;
  std::size_t left_;
  Finish finish_;
};

const char* outcome_text(ReleaseOutcome outcome) {
  switch (outcome) {
    case ReleaseOutcome::released:
      return "released";
    case ReleaseOutcome::still_held:
      return "still held (reentrant)";
    case ReleaseOutcome::not_held:
      return "not held by this owner";
    case ReleaseOutcome::lost:
      return "lost (expired or removed while held)";
    case ReleaseOutcome::failed:
      return "failed";
  }
  return "?";
}

std::string error_text(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace

std::string MultiLockState::name() const {
  std::string out = "multi[";
  for (std::size_t i = 0; i < members.size(); ++i) {
    out += (i ? ", " : "") + members[i]->name();
  }
  return out + "]";
}

Metrics* MultiLockState::metrics() const { return members.front()->core()->config().metrics.get(); }

void start_multi_try(const std::shared_ptr<MultiLockState>& state, std::int64_t owner,
                     Duration wait, Duration lease, AttemptDone done) {
  if (auto meter = multi_meter(*state)) {
    done = [meter, done = std::move(done)](std::exception_ptr error, AttemptReport report) {
      meter->probe->attempts = static_cast<std::uint64_t>(report.passes);
      metrics_acquired(meter, error, report.acquired, nullptr);
      done(std::move(error), std::move(report));
    };
  }
  run_multi_try(state, owner, wait, lease, std::move(done));
}

void start_multi_lock(const std::shared_ptr<MultiLockState>& state, std::int64_t owner,
                      Duration lease, std::function<void(std::exception_ptr)> done) {
  auto meter = multi_meter(*state);
  if (meter) {
    done = [meter, done = std::move(done)](std::exception_ptr error) {
      metrics_acquired(meter, error, !error, nullptr);
      done(std::move(error));
    };
  }
  std::make_shared<LockLoop>(state, owner, lease, std::move(done), probe_of(meter))->run();
}

void start_multi_unlock(const std::shared_ptr<MultiLockState>& state, std::int64_t owner,
                        std::function<void(ReleaseResult, std::exception_ptr)> done) {
  std::vector<std::size_t> subset;
  std::optional<Clock::time_point> since;  // set when this release ends the outermost hold
  {
    std::lock_guard lock(state->mutex);
    auto it = state->holds.find(owner);
    if (it != state->holds.end() && !it->second.empty()) {
      subset = std::move(it->second.back());
      it->second.pop_back();
      if (it->second.empty()) {
        state->holds.erase(it);
        if (auto s = state->held_since.find(owner); s != state->held_since.end()) {
          since = s->second;
          state->held_since.erase(s);
        }
      }
    }
  }
  if (subset.empty()) {
    for (std::size_t i = 0; i < state->members.size(); ++i) subset.push_back(i);
  }
  const bool tolerant = state->policy.tolerant;
  auto finish = [state, subset, tolerant, owner, since, done](
                    std::vector<ReleaseOutcome>& outcomes,
                    std::vector<std::exception_ptr>& errors) {
    std::string problems;
    bool all_released = true, any_still = false, any_lost = false, any_not_held = false;
    std::size_t considered = 0;
    std::exception_ptr first_failure;
    for (std::size_t k = 0; k < subset.size(); ++k) {
      ReleaseOutcome o = outcomes[k];
      if (errors[k]) o = ReleaseOutcome::failed;
      if (o != ReleaseOutcome::released && o != ReleaseOutcome::still_held) {
        problems += "\n  " + state->members[subset[k]]->describe() + ": " + outcome_text(o);
        if (errors[k]) problems += ": " + error_text(errors[k]);
      }
      if (o == ReleaseOutcome::failed) {
        if (!first_failure) first_failure = errors[k];
        if (tolerant) continue;
      }
      ++considered;
      all_released = all_released && o == ReleaseOutcome::released;
      any_still = any_still || o == ReleaseOutcome::still_held;
      any_lost = any_lost || o == ReleaseOutcome::lost;
      any_not_held = any_not_held || o == ReleaseOutcome::not_held;
    }
    const std::string what = "redisync: unlock of " +
                             std::string(tolerant ? "RedLock" : "multi-lock") + " by owner " +
                             std::to_string(owner) + ":" + problems;
    ReleaseResult result{ReleaseOutcome::released, {}};
    std::exception_ptr error;
    if (considered == 0 || (first_failure && !tolerant)) {
      result = {ReleaseOutcome::failed, what};
      error = first_failure;
    } else if (any_lost) {
      result = {ReleaseOutcome::lost, what};
      error = std::make_exception_ptr(LockLostError(what));
    } else if (any_not_held) {
      result = {ReleaseOutcome::not_held, what};
      error = std::make_exception_ptr(NotOwnerError(what));
    } else if (!all_released && any_still) {
      result = {ReleaseOutcome::still_held, {}};
    }
    if (Metrics* sink = state->metrics(); sink && since) {
      if (result.outcome == ReleaseOutcome::released) {
        report_release(*sink, state->metrics_kind(), state->name(), *since);
      } else if (result.outcome == ReleaseOutcome::lost) {
        report_lost(*sink, state->metrics_kind(), state->name());
      }
    }
    done(result, error);
  };
  auto gather = std::make_shared<Gather<ReleaseOutcome>>(subset.size(), ReleaseOutcome::failed,
                                                         std::move(finish));
  for (std::size_t k = 0; k < subset.size(); ++k) {
    state->members[subset[k]]->release(
        owner, [gather, k](ReleaseOutcome o, std::exception_ptr e) { gather->set(k, e, o); });
  }
  if (tolerant) {
    // RedLock: a member that cannot answer in time does not hold the release up.
    const Duration limit = state->options.reply_timeout;
    auto timer =
        TimerSlot::arm(state->members[subset.front()]->core()->io(), limit, [gather, limit] {
          gather->expire(std::make_exception_ptr(TimeoutError(
              "no answer within " + std::to_string(limit.count()) + " ms (release continues)")));
        });
    (void)timer;
  }
}

void start_multi_is_held(const std::shared_ptr<MultiLockState>& state, std::int64_t owner,
                         std::function<void(std::exception_ptr, bool)> done) {
  const bool tolerant = state->policy.tolerant;
  const std::size_t need = state->required();
  auto finish = [tolerant, need, done](std::vector<bool>& held,
                                       std::vector<std::exception_ptr>& errors) {
    std::size_t count = 0;
    for (std::size_t k = 0; k < held.size(); ++k) {
      if (errors[k] && !tolerant) return done(errors[k], false);
      if (!errors[k] && held[k]) ++count;
    }
    done(nullptr, count >= need);
  };
  const std::size_t n = state->members.size();
  auto gather = std::make_shared<Gather<bool>>(n, false, std::move(finish));
  for (std::size_t k = 0; k < n; ++k) {
    state->members[k]->is_held(owner,
                               [gather, k](std::exception_ptr e, bool h) { gather->set(k, e, h); });
  }
}

}  // namespace redisync::detail
