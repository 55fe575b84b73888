// SPDX-License-Identifier: Apache-2.0
// redisync::FencedLock: Redisson's fenced lock (docs/wire-format.md §11).
#include "redisync/fenced_lock.h"

#include "lua/scripts.h"
#include "net/server_text.h"
#include "sync/identity.h"
#include "sync/locks/hash_lock_steps.h"

namespace redisync {

namespace {

class FencedKind final : public detail::HashLockKind {
 public:
  std::string noun() const override { return "fenced lock"; }

  /// The acquire loop (hash_lock_steps.h); with `token` set, the step is acquire-with-token
  /// and the token of the acquisition is stored there. Wake mode has the starvation guard, as
  /// Lock's: the chaos suite's slow-network case saw a fenced waiter lose every race for 4 s.
  /// Grant mode has none (a registered waiter is granted the lock in turn).
  void start_token_loop(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                        std::int64_t owner, detail::LoopStart start,
                        std::shared_ptr<std::optional<std::uint64_t>> token) const {
    auto fenced = detail::HashLockVariant::fenced_lock(std::move(token));
    const auto self = shared_from_this();
    if (auto link = detail::grant_link(core, *this, name, owner)) {
      return detail::start_lock_grant_loop(core, self, name, owner, std::move(start),
                                           std::move(link), std::move(fenced));
    }
    detail::start_guarded_lock_loop(core, self, name, owner, std::move(start),
                                    lua::fenced_lock_acquire, std::move(fenced));
  }

  void release_step(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                    const detail::HoldRef& hold, Duration lease, const std::string& record,
                    net::ReplyHandler handler) const override {
    if (core->config().handoff != Handoff::grant) {
      return HashLockKind::release_step(core, name, hold, lease, record, std::move(handler));
    }
    detail::grant_release_step(core, name, hold, lease, record, detail::fenced_token_key(name),
                               std::move(handler));
  }

  void start_loop(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  std::int64_t owner, detail::LoopStart start) const override {
    start_token_loop(core, name, owner, std::move(start), nullptr);
  }

};

}  // namespace

FencedLock::FencedLock(std::shared_ptr<detail::ClientCore> core, std::string name)
    : BasicLock(std::move(core), std::move(name), detail::shared_kind<FencedKind>()) {}

void FencedLock::start_token_acquire(std::int64_t owner, Duration lease, Duration wait,
                                     TokenDone done,
                                     std::shared_ptr<detail::CancelSignal> cancel) const {
  auto token = std::make_shared<std::optional<std::uint64_t>>();
  auto kind = std::static_pointer_cast<const FencedKind>(kind_);
  detail::run_acquire(
      core_, kind_, name_, owner, lease, wait,
      [token, done](std::exception_ptr error, bool acquired) {
        done(error, acquired ? *token : std::nullopt);
      },
      [core = core_, name = name_, owner, token, kind](detail::LoopStart start) {
        kind->start_token_loop(core, name, owner, std::move(start), token);
      },
      std::move(cancel));
}

std::optional<std::uint64_t> FencedLock::acquire_token(Duration wait, Duration lease) {
  const auto owner = sync::thread_owner_id();
  return core_->call<std::optional<std::uint64_t>>(
      [&](auto done) { start_token_acquire(owner, lease, wait, done); });
}

std::uint64_t FencedLock::lock_and_get_token() {
  return acquire_token(Duration{-1}, Duration{0}).value_or(0);
}

std::uint64_t FencedLock::lock_and_get_token(Duration lease) {
  check_lease(lease);
  return acquire_token(Duration{-1}, lease).value_or(0);
}

std::optional<std::uint64_t> FencedLock::try_lock_and_get_token_for(Duration wait) {
  return acquire_token(detail::clamp_wait(wait), Duration{0});
}

std::optional<std::uint64_t> FencedLock::try_lock_and_get_token_for(Duration wait, Duration lease) {
  check_lease(lease);
  return acquire_token(detail::clamp_wait(wait), lease);
}

std::uint64_t FencedLock::token() const {
  const std::string key = detail::fenced_token_key(name_);
  const std::string what = "reading the token of " + kind_->describe(*core_, name_);
  return net::stored_number<std::uint64_t>(detail::query(core_, {"GET", key}, what), what,
                                           "key '" + key + "'");
}

}  // namespace redisync
