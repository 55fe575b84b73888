// SPDX-License-Identifier: Apache-2.0
// redisync::MultiLock: the blocking API over the state machine of sync/multi/multi_lock_attempt.h.
#include "redisync/multi_lock.h"

#include <set>

#include "log_line.h"
#include "sync/acquire/blocking_result.h"
#include "sync/client_core.h"
#include "sync/durations.h"
#include "sync/identity.h"
#include "sync/locks/lock_kind.h"
#include "sync/multi/multi_lock_attempt.h"

namespace redisync {

namespace {

// Runs `start(done)` and blocks until `done(error, value)`; rethrows the error.
template <class T, class Start>
T wait_for(Start&& start) {
  auto result = std::make_shared<sync::BlockingResult<T>>();
  start([result](std::exception_ptr error, T value) {
    result->complete(std::move(error), std::move(value));
  });
  return result->take();
}

// Throws ClientClosedError if a member's Client is gone (its I/O thread would never answer),
// InvalidArgument on a member's I/O thread (wait_for would wait for that thread itself).
// Every blocking call runs it before wait_for.
void check_open(const detail::MultiLockState& state) {
  for (const auto& member : state.members) member->core()->check_not_io_thread();
  std::set<detail::ClientCore*> seen;
  for (const auto& member : state.members) {
    if (!seen.insert(member->core().get()).second) continue;
    member->core()->call<bool>([](auto done) { done(nullptr, true); });
  }
}

}  // namespace

const char* to_string(MemberOutcome outcome) {
  switch (outcome) {
    case MemberOutcome::acquired:
      return "acquired";
    case MemberOutcome::held_by_another:
      return "held by another";
    case MemberOutcome::timed_out:
      return "timed out";
    case MemberOutcome::unreachable:
      return "unreachable";
    case MemberOutcome::credentials_refused:
      return "credentials refused";
    case MemberOutcome::error:
      return "error";
    case MemberOutcome::not_attempted:
      return "not attempted";
  }
  return "?";
}

int AttemptReport::contended() const {
  int n = 0;
  for (const auto& m : members) n += m.outcome == MemberOutcome::held_by_another ? 1 : 0;
  return n;
}

int AttemptReport::failed() const {
  int n = 0;
  for (const auto& m : members) {
    n += m.outcome == MemberOutcome::timed_out || m.outcome == MemberOutcome::unreachable ||
                 m.outcome == MemberOutcome::credentials_refused ||
                 m.outcome == MemberOutcome::error
             ? 1
             : 0;
  }
  return n;
}

std::string AttemptReport::describe() const {
  std::string out;
  for (const auto& m : members) {
    if (!out.empty()) out += "\n";
    out += "  " + m.member + ": " + to_string(m.outcome);
    if (!m.detail.empty()) out += " (" + m.detail + ")";
  }
  return out;
}

MultiLock::MultiLock(std::initializer_list<AnyLock> members)
    : MultiLock(std::vector<AnyLock>(members), MultiLockOptions{}) {}

MultiLock::MultiLock(std::vector<AnyLock> members, MultiLockOptions options)
    : MultiLock(std::move(members), options, detail::MultiLockPolicy{}) {}

MultiLock::MultiLock(std::vector<AnyLock> members, MultiLockOptions options,
                     detail::MultiLockPolicy policy)
    : state_(std::make_shared<detail::MultiLockState>()) {
  if (members.empty()) throw InvalidArgument("redisync: a multi-lock needs at least one member");
  if (options.reply_timeout <= Duration{0}) {
    throw InvalidArgument("redisync: multi-lock reply_timeout must be > 0 (got " +
                          std::to_string(options.reply_timeout.count()) + " ms)");
  }
  for (auto& m : members) state_->members.push_back(std::move(m.impl_));
  state_->options = options;
  state_->policy = policy;
}

std::string MultiLock::name() const { return state_->name(); }

std::size_t MultiLock::size() const { return state_->members.size(); }

std::vector<std::string> MultiLock::members() const {
  std::vector<std::string> out;
  for (const auto& m : state_->members) out.push_back(m->describe());
  return out;
}

asio::io_context& MultiLock::io() const { return state_->members.front()->core()->io(); }

const std::shared_ptr<detail::ClientCore>& MultiLock::first_core() const {
  return state_->members.front()->core();
}

void MultiLock::check_lease(Duration lease) const {
  sync::check_lease(lease, "lease for " + name());
  // With the validity check (RedLock) a lease whose drift allowance (0.01 x lease + 2 ms)
  // leaves no validity would make every attempt fail and lock() retry forever (issue 22).
  if (state_->policy.check_validity && lease < kMinValidityLease) {
    throw InvalidArgument("redisync: lease for " + name() + " must be at least " +
                          std::to_string(kMinValidityLease.count()) +
                          " ms (the clock drift allowance of 0.01 x lease + 2 ms leaves no "
                          "validity below that; got " + std::to_string(lease.count()) + " ms)");
  }
}

void MultiLock::check_watchdog_lease() const {
  if (!state_->policy.check_validity) return;
  for (const auto& member : state_->members) {
    const Duration lease = member->core()->config().lock_watchdog_timeout;
    if (lease >= kMinValidityLease) continue;
    throw InvalidArgument("redisync: the watchdog lease of " + name() + " (lock_watchdog_timeout " +
                          std::to_string(lease.count()) + " ms of " + member->describe() +
                          ") must be at least " + std::to_string(kMinValidityLease.count()) +
                          " ms (the clock drift allowance of 0.01 x lease + 2 ms leaves no "
                          "validity below that)");
  }
}

std::exception_ptr MultiLock::lease_error(Duration lease) const {
  try {
    if (lease > Duration{0}) {
      check_lease(lease);
    } else {
      check_watchdog_lease();
    }
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

// ClientClosedError when a member's Client is closed (the blocking forms' check_open throws
// it): its member steps would be posted to a stopped I/O context and never complete.
static std::exception_ptr closed_member(const detail::MultiLockState& state) {
  for (const auto& member : state.members) {
    if (member->core()->closed()) return detail::ClientCore::closed_error();
  }
  return nullptr;
}

// Every entry point, blocking or async, comes through start_try or start_lock: the lease is
// checked here, before anything is written (an async form used to skip it and retry forever).
void MultiLock::start_try(std::int64_t owner, Duration wait, Duration lease, TryDone done,
                          std::shared_ptr<detail::CancelSignal> cancel) const {
  if (auto error = lease_error(lease)) return done(error, AttemptReport{});
  if (auto error = closed_member(*state_)) {
    return detail::ClientCore::fail_later([done, error] { done(error, AttemptReport{}); });
  }
  const Duration w = detail::clamp_wait(wait);
  detail::start_multi_try(state_, owner, w < Duration{0} ? max_duration : w, lease, std::move(done),
                          std::move(cancel));
}

void MultiLock::start_lock(std::int64_t owner, Duration lease,
                           std::function<void(std::exception_ptr)> done,
                           std::shared_ptr<detail::CancelSignal> cancel) const {
  if (auto error = lease_error(lease)) return done(error);
  if (auto error = closed_member(*state_)) {
    return detail::ClientCore::fail_later([done, error] { done(error); });
  }
  detail::start_multi_lock(state_, owner, lease, std::move(done), std::move(cancel));
}

void MultiLock::start_unlock(std::int64_t owner, UnlockDone done) const {
  if (auto error = closed_member(*state_)) {
    return detail::ClientCore::fail_later([done, error] {
      done(ReleaseResult{ReleaseOutcome::failed, "redisync: client is closed"}, error);
    });
  }
  detail::start_multi_unlock(state_, owner, std::move(done));
}

void MultiLock::lock() {
  check_open(*state_);
  const auto owner = sync::thread_owner_id();
  wait_for<bool>([&](auto done) {
    start_lock(owner, Duration{0}, [done](std::exception_ptr e) { done(e, true); });
  });
}

void MultiLock::lock(Duration lease) {
  check_lease(lease);
  check_open(*state_);
  const auto owner = sync::thread_owner_id();
  wait_for<bool>([&](auto done) {
    start_lock(owner, lease, [done](std::exception_ptr e) { done(e, true); });
  });
}

bool MultiLock::try_lock() { return try_acquire(Duration{0}, Duration{0}).acquired; }

bool MultiLock::try_lock_for(Duration wait, Duration lease) {
  check_lease(lease);
  return try_acquire(detail::clamp_wait(wait), lease).acquired;
}

AttemptReport MultiLock::try_acquire(Duration wait, Duration lease) {
  check_open(*state_);
  const auto owner = sync::thread_owner_id();
  // A negative wait comes from to_wait() (beyond max_duration): wait the longest a deadline
  // holds (max_duration, about 31.7 years), as good as no limit.
  const Duration w = wait < Duration{0} ? max_duration : wait;
  return wait_for<AttemptReport>([&](auto done) { start_try(owner, w, lease, done); });
}

AttemptReport MultiLock::last_attempt() const {
  std::lock_guard lock(state_->mutex);
  return state_->last;
}

ReleaseResult MultiLock::release() noexcept {
  try {
    check_open(*state_);
    const auto owner = sync::thread_owner_id();
    return wait_for<ReleaseResult>([&](auto done) {
      start_unlock(owner, [done](ReleaseResult r, std::exception_ptr) { done(nullptr, r); });
    });
  } catch (const std::exception& e) {
    return ReleaseResult{ReleaseOutcome::failed, e.what()};
  } catch (...) {
    return ReleaseResult{ReleaseOutcome::failed, "unknown error"};
  }
}

void MultiLock::unlock() noexcept {
  const ReleaseResult r = release();
  if (r) return;
  try {
    const std::string line =
        "unlock of " + name() + " did not succeed: " + (r.error.empty() ? "not held" : r.error);
    if (state_->members.empty()) {
      detail::log_line(Config{}, line);
    } else {
      detail::log_line(state_->members.front()->core()->config(), line);
    }
  } catch (...) {
  }
}

void MultiLock::unlock_checked() {
  check_open(*state_);
  const auto owner = sync::thread_owner_id();
  wait_for<bool>([&](auto done) {
    start_unlock(owner, [done](ReleaseResult, std::exception_ptr e) { done(e, true); });
  });
}

bool MultiLock::is_held_by_current_thread() const {
  return is_held_by_thread(sync::thread_owner_id());
}

bool MultiLock::lost(std::int64_t owner) const {
  check_open(*state_);
  detail::MultiLockState::Held taken;
  {
    std::lock_guard g(state_->mutex);
    auto it = state_->holds.find(owner);
    if (it == state_->holds.end() || it->second.empty()) return false;
    taken = it->second.front();  // the outermost acquisition's members (re-entries: the same)
  }
  // A member is sound while the owner's hold of it is the one the acquisition joined: one
  // lost and taken afresh by a later acquisition (or released) is not.
  std::size_t sound = 0;
  for (std::size_t j = 0; j < taken.members.size(); ++j) {
    if (state_->members[taken.members[j]]->lineage(owner) == taken.lineages[j]) ++sound;
  }
  return sound < state_->required();
}

bool MultiLock::lost_by_current_thread() const { return lost(sync::thread_owner_id()); }

bool MultiLock::is_held_by_thread(std::int64_t owner) const {
  check_open(*state_);
  return wait_for<bool>([&](auto done) { detail::start_multi_is_held(state_, owner, done); });
}

}  // namespace redisync
