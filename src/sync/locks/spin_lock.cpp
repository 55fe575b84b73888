// SPDX-License-Identifier: Apache-2.0
// redisync::SpinLock: Redisson's spin lock (docs/wire-format.md §10).
#include "redisync/spin_lock.h"

#include <algorithm>

#include "lua/scripts.h"
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
    auto steps = detail::spin_lock_steps(core, shared_from_this(), name, owner, start.lease);
    detail::start_spin_loop(core, std::move(start), std::move(steps),
                            sync::BackoffSequence(backoff_, random_seed()));
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
