// SPDX-License-Identifier: Apache-2.0
// redisync::BasicLock: the blocking API over the shared flows of sync/locks/lock_kind.h.
#include "redisync/basic_lock.h"

#include <asio/post.hpp>

#include "net/server_text.h"
#include "sync/durations.h"
#include "sync/identity.h"
#include "sync/locks/lock_kind.h"

namespace redisync {

BasicLock::BasicLock(std::shared_ptr<detail::ClientCore> core, std::string name,
                     std::shared_ptr<const detail::LockKind> kind)
    : core_(std::move(core)), name_(std::move(name)), kind_(std::move(kind)) {
  if (name_.empty())
    throw InvalidArgument("redisync: " + kind_->noun() + " name must not be empty");
  sync::check_cluster_name(core_->config().topology == Topology::cluster, name_, kind_->noun());
}

asio::io_context& BasicLock::io() const { return core_->io(); }

void BasicLock::start_acquire(std::int64_t owner, Duration lease, Duration wait,
                              std::function<void(std::exception_ptr, bool)> done,
                              std::shared_ptr<detail::CancelSignal> cancel) const {
  detail::run_acquire(core_, kind_, name_, owner, lease, wait, std::move(done), nullptr,
                      std::move(cancel));
}

void BasicLock::start_release(std::int64_t owner,
                              std::function<void(std::exception_ptr)> done) const {
  const std::string what = kind_->describe(*core_, name_);
  detail::run_release(core_, kind_, name_, owner,
                      [done, what, owner](ReleaseOutcome outcome, std::exception_ptr error) {
                        done(error ? error : detail::outcome_error(outcome, what, owner));
                      });
}

void BasicLock::check_lease(Duration lease) const {
  sync::check_lease(lease, "lease for " + kind_->noun() + " '" + name_ + "'");
}

std::string BasicLock::owner_field(std::int64_t owner) const {
  return core_->owner_field(owner) + kind_->field_suffix();
}

void BasicLock::lock() {
  const auto owner = sync::thread_owner_id();
  core_->call<bool>([&](auto done) { start_acquire(owner, Duration{0}, Duration{-1}, done); });
}

void BasicLock::lock(Duration lease) {
  check_lease(lease);
  const auto owner = sync::thread_owner_id();
  core_->call<bool>([&](auto done) { start_acquire(owner, lease, Duration{-1}, done); });
}

bool BasicLock::try_lock() { return try_acquire(Duration{0}, Duration{0}); }

bool BasicLock::try_lock_for(Duration wait, Duration lease) {
  check_lease(lease);
  return try_acquire(detail::clamp_wait(wait), lease);
}

bool BasicLock::try_acquire(Duration wait, Duration lease) {
  const auto owner = sync::thread_owner_id();
  return core_->call<bool>([&](auto done) { start_acquire(owner, lease, wait, done); });
}

ReleaseOutcome BasicLock::release_outcome() {
  const auto owner = sync::thread_owner_id();
  return core_->call<ReleaseOutcome>([&](auto done) {
    detail::run_release(core_, kind_, name_, owner,
                        [done](ReleaseOutcome outcome, std::exception_ptr e) { done(e, outcome); });
  });
}

ReleaseResult BasicLock::release() noexcept {
  try {
    return ReleaseResult{release_outcome(), {}};
  } catch (const std::exception& e) {
    return ReleaseResult{ReleaseOutcome::failed, e.what()};
  } catch (...) {
    return ReleaseResult{ReleaseOutcome::failed, "unknown error"};
  }
}

void BasicLock::unlock() noexcept {
  try {
    const auto owner = sync::thread_owner_id();
    // The start runs on the I/O thread already (ClientCore::call): posting it once more
    // could queue it behind a closing Client's shutdown, where it would never run.
    core_->call<bool>([core = core_, kind = kind_, name = name_, owner](auto done) {
      detail::quiet_unlock(core, kind, name, owner, [done] { done(nullptr, true); });
    });
  } catch (const std::exception& e) {
    detail::log_quiet_unlock(*core_, describe_or_name(), e.what());
  } catch (...) {
    detail::log_quiet_unlock(*core_, describe_or_name(), "unknown error");
  }
}

std::string BasicLock::describe_or_name() const noexcept {
  try {
    return kind_->describe(*core_, name_);
  } catch (...) {
    try {
      return name_;
    } catch (...) {
      return {};
    }
  }
}

void BasicLock::unlock_checked() {
  const std::string what = kind_->describe(*core_, name_);
  const ReleaseOutcome outcome = release_outcome();  // throws when the server is unreachable
  if (auto error = detail::outcome_error(outcome, what, sync::thread_owner_id())) {
    std::rethrow_exception(error);
  }
}

bool BasicLock::force_unlock() {
  return core_->call<bool>(
      [&](auto done) { detail::run_force_release(core_, kind_, name_, done); });
}

using detail::query;

bool BasicLock::is_locked() const {
  return core_->call<bool>([&](auto done) { kind_->is_locked(core_, name_, done); });
}

bool BasicLock::is_held_by_current_thread() const {
  return is_held_by_thread(sync::thread_owner_id());
}

bool BasicLock::is_held_by_thread(std::int64_t owner) const {
  // A hold reported lost (e.g. its local lease deadline passed while the server was silent)
  // is not held, whatever a late server would still say.
  if (detail::known_lost(core_, kind_->hold_key(name_), owner)) {
    return false;
  }
  return query(core_, {"HEXISTS", name_, owner_field(owner)},
               "querying " + kind_->describe(*core_, name_))
             .integer == 1;
}

bool BasicLock::lost(std::int64_t owner) const {
  return detail::known_lost(core_, kind_->hold_key(name_), owner);
}

bool BasicLock::lost_by_current_thread() const { return lost(sync::thread_owner_id()); }

int BasicLock::hold_count() const {
  const std::string field = owner_field(sync::thread_owner_id());
  const std::string what = "querying " + kind_->describe(*core_, name_);
  return net::stored_number<int>(query(core_, {"HGET", name_, field}, what), what,
                                 "key '" + name_ + "' field '" + field + "'");
}

Duration BasicLock::remaining_lease() const {
  return Duration{
      query(core_, {"PTTL", name_}, "querying " + kind_->describe(*core_, name_)).integer};
}

}  // namespace redisync
