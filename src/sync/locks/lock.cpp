// SPDX-License-Identifier: Apache-2.0
// redisync::Lock: Redisson's reentrant RLock (docs/wire-format.md, "Lock"), as one lock kind on
// the shared flows of sync/locks/lock_kind.h. What only this kind has is its acquire step with the
// starvation guard (sync/locks/starvation_guard.h, hash_lock_steps.cpp).
#include "redisync/lock.h"

#include "lua/scripts.h"
#include "sync/identity.h"
#include "sync/locks/hash_lock_steps.h"

namespace redisync {

namespace {

class PlainKind final : public detail::HashLockKind {
 public:
  std::string noun() const override { return "lock"; }

  void start_loop(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  std::int64_t owner, detail::LoopStart start) const override {
    const auto self = shared_from_this();
    // Grant mode: the registering acquire; no starvation guard (a registered waiter is
    // granted the lock in turn).
    if (auto link = detail::grant_link(core, *this, name, owner)) {
      return detail::start_lock_grant_loop(core, self, name, owner, std::move(start),
                                           std::move(link));
    }
    detail::start_guarded_lock_loop(core, self, name, owner, std::move(start),
                                    lua::lock_acquire);
  }
};

}  // namespace

Lock::Lock(std::shared_ptr<detail::ClientCore> core, std::string name)
    : BasicLock(std::move(core), std::move(name), detail::shared_kind<PlainKind>()) {}

}  // namespace redisync
