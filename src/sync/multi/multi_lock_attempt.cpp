// SPDX-License-Identifier: Apache-2.0
#include "sync/multi/multi_lock_attempt.h"

#include <algorithm>
#include <asio/post.hpp>

#include "sync/acquire/cancel_signal.h"
#include "sync/client_core.h"
#include "sync/metrics_report.h"
#include "sync/multi/multi_lock_try.h"

// The try itself is multi_lock_try.cpp; unlock and is_held are multi_lock_unlock.cpp.

namespace redisync::detail {

namespace {

// A meter of one acquisition of the multi-lock as a whole (nullptr without a hook).
std::shared_ptr<AcquireMeter> multi_meter(const MultiLockState& state) {
  if (!state.metrics()) return nullptr;
  return start_acquire_meter(*state.members.front()->core(), state.metrics_kind(), state.name());
}

// Blocking "lock" (docs/wire-format.md §6): tries with an internal wait until acquired.
class LockLoop : public std::enable_shared_from_this<LockLoop> {
 public:
  LockLoop(std::shared_ptr<MultiLockState> state, std::int64_t owner, Duration lease,
           std::function<void(std::exception_ptr)> done, std::shared_ptr<sync::AcquireProbe> probe,
           std::shared_ptr<MultiCancel> cancel)
      : state_(std::move(state)),
        owner_(owner),
        lease_(lease),
        done_(std::move(done)),
        probe_(std::move(probe)),
        cancel_(std::move(cancel)) {}

  void run() {
    const long long base = static_cast<long long>(state_->members.size()) * 1500;
    long long wait = base;
    const long long lease = lease_.count();
    if (lease > 0)
      wait = lease <= base ? random_between(lease / 2, lease) : random_between(base, lease);
    auto self = shared_from_this();
    // A cancelled try (cancel_) ends with CancelledError: the error below.
    run_multi_try(
        state_, owner_, Duration{std::max(wait, 1LL)}, lease_,
        [self](std::exception_ptr error, AttemptReport report) {
          if (self->probe_) self->probe_->attempts += report.passes;
          if (error) return self->done_(error);
          if (report.acquired) return self->done_(nullptr);
          if (report.failed() > self->state_->policy.tolerated_failures) {
            return self->done_(std::make_exception_ptr(self->error(report)));
          }
          self->run();
        },
        cancel_);
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
  std::shared_ptr<MultiCancel> cancel_;        // nullptr: not cancellable
};

// The async caller's cancellation (nullptr: none) as the tries see it: `signal` is attached on
// the first member's I/O thread and hands a request to the running try; `done` detaches it
// there once the acquisition completed (later requests do nothing).
template <class... Args>
std::shared_ptr<MultiCancel> follow(const MultiLockState& state,
                                    std::shared_ptr<CancelSignal> signal,
                                    std::function<void(std::exception_ptr, Args...)>& done) {
  if (!signal) return nullptr;
  auto cancel = std::make_shared<MultiCancel>();
  auto core = state.members.front()->core();
  asio::post(core->io(), [signal, cancel] { signal->attach([cancel] { cancel->request(); }); });
  done = [core, signal, done = std::move(done)](std::exception_ptr error, Args... args) {
    asio::post(core->io(), [signal] { signal->detach(); });
    done(std::move(error), std::move(args)...);
  };
  return cancel;
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
                     Duration wait, Duration lease, AttemptDone done,
                     std::shared_ptr<CancelSignal> signal) {
  auto cancel = follow(*state, std::move(signal), done);
  if (auto meter = multi_meter(*state)) {
    done = [meter, done = std::move(done)](std::exception_ptr error, AttemptReport report) {
      meter->probe->attempts = static_cast<std::uint64_t>(report.passes);
      metrics_acquired(meter, error, report.acquired, nullptr);
      done(std::move(error), std::move(report));
    };
  }
  run_multi_try(state, owner, wait, lease, std::move(done), std::move(cancel));
}

void start_multi_lock(const std::shared_ptr<MultiLockState>& state, std::int64_t owner,
                      Duration lease, std::function<void(std::exception_ptr)> done,
                      std::shared_ptr<CancelSignal> signal) {
  auto cancel = follow(*state, std::move(signal), done);
  auto meter = multi_meter(*state);
  if (meter) {
    done = [meter, done = std::move(done)](std::exception_ptr error) {
      metrics_acquired(meter, error, !error, nullptr);
      done(std::move(error));
    };
  }
  std::make_shared<LockLoop>(state, owner, lease, std::move(done), probe_of(meter),
                             std::move(cancel))
      ->run();
}

}  // namespace redisync::detail
