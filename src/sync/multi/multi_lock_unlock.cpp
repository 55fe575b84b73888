// SPDX-License-Identifier: Apache-2.0
// Unlock and is_held of the multi-lock: each asks every member (the held subset for unlock)
// at once and decides on the gathered answers.
#include <optional>

#include "redisync/errors.h"
#include "sync/client_core.h"
#include "sync/failure_kind.h"
#include "sync/metrics_report.h"
#include "sync/multi/multi_lock_attempt.h"
#include "sync/multi/timer_slot.h"

namespace redisync::detail {

namespace {

using Clock = std::chrono::steady_clock;

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

}  // namespace

void start_multi_unlock(const std::shared_ptr<MultiLockState>& state, std::int64_t owner,
                        std::function<void(ReleaseResult, std::exception_ptr)> done) {
  std::vector<std::size_t> subset;
  std::optional<Clock::time_point> since;  // set when this release ends the outermost hold
  {
    std::lock_guard lock(state->mutex);
    auto it = state->holds.find(owner);
    if (it != state->holds.end() && !it->second.empty()) {
      subset = std::move(it->second.back().members);
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
        if (errors[k]) problems += ": " + sync::failure_text(errors[k]);
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
