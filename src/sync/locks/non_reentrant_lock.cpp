// SPDX-License-Identifier: Apache-2.0
// redisync::NonReentrantLock and NonReentrantFairLock (docs/wire-format.md §12).
#include "redisync/non_reentrant_lock.h"

#include "lua/scripts.h"
#include "sync/acquire/grant.h"
#include "sync/locks/hash_lock_steps.h"
#include "sync/locks/non_reentrant.h"
#include "sync/locks/starvation_guard.h"

namespace redisync {

namespace detail {

std::exception_ptr as_reentry_error(std::exception_ptr error, const std::string& what) {
  if (!error) return error;
  try {
    std::rethrow_exception(error);
  } catch (const ServerError& e) {
    if (e.reply().find("NON_REENTRANT_REACQUIRE") != std::string::npos) {
      return std::make_exception_ptr(ReentryError(
          "redisync: " + what + " is already held by this owner; a non-reentrant lock cannot "
          "be acquired again by its holder (unlock it first)"));
    }
  } catch (...) {
  }
  return error;
}

std::exception_ptr waiting_owner_error(const ClientCore& core, const std::string& name,
                                       std::int64_t owner, const std::string& what) {
  if (core.config().handoff != Handoff::grant ||
      !core.grants().waiting(sync::grant_channel(name, core.id()), core.owner_field(owner))) {
    return nullptr;
  }
  return std::make_exception_ptr(ReentryError(
      "redisync: " + what + " is already being waited for by this owner (another acquisition "
      "with the same owner id); a non-reentrant lock cannot be acquired twice by one owner"));
}

}  // namespace detail

namespace {

// Grant mode (docs/wire-format.md §18): where the re-entry guard goes. An owner this Client
// counts a hold of gets no grant link (grant_link) and sends the guarded step, which refuses
// the re-entry exactly as in wake mode. Any other acquisition sends Lock's grant-mode step
// with its non-reentrant flag: a field of its owner found in the hash is its grant when the
// grant mark names the acquisition (reply -3), and otherwise a hold it refuses
// (NON_REENTRANT_REACQUIRE: another acquisition of the owner got there first). A second
// acquisition of an owner that still waits (two tasks sharing an owner id) is refused at once
// (waiting_owner_error), as it would be once the first held. The release is Lock's
// (HashLockKind), which grants in grant mode. Wake mode never gets a link: the guarded step,
// as Redisson's.
class NonReentrantKind final : public detail::HashLockKind {
 public:
  std::string noun() const override { return "non-reentrant lock"; }

  void start_loop(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  std::int64_t owner, detail::LoopStart start) const override {
    const auto self = shared_from_this();
    if (auto error = detail::waiting_owner_error(*core, name, owner, describe(*core, name))) {
      return start.done(error, {});
    }
    if (auto link = detail::grant_link(core, *this, name, owner)) {
      return detail::start_lock_grant_loop(core, self, name, owner, std::move(start),
                                           std::move(link),
                                           detail::HashLockVariant::non_reentrant());
    }
    // Wake mode: Lock's step (with its starvation guard) behind the re-entry check. The loop's
    // recheck after a lost reply reads the owner's count, never resends: a second run would
    // answer NON_REENTRANT_REACQUIRE for our own first one.
    detail::start_guarded_lock_loop(core, self, name, owner, std::move(start),
                                    lua::non_reentrant_lock_acquire,
                                    detail::HashLockVariant::non_reentrant());
  }
};

}  // namespace

NonReentrantLock::NonReentrantLock(std::shared_ptr<detail::ClientCore> core, std::string name)
    : BasicLock(std::move(core), std::move(name), detail::shared_kind<NonReentrantKind>()) {}

NonReentrantFairLock::NonReentrantFairLock(std::shared_ptr<detail::ClientCore> core,
                                           std::string name)
    : BasicLock(std::move(core), std::move(name), detail::non_reentrant_fair_kind()) {}

}  // namespace redisync
