// SPDX-License-Identifier: Apache-2.0
// ReadWriteLock's acquisition records: what each side's attempt sends, and the write side's
// give-up, over the hold-count steps both share.
#include "sync/locks/rw_lock_steps.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "lua/scripts.h"
#include "redisync/errors.h"
#include "sync/acquire/grant.h"
#include "sync/identity.h"
#include "sync/locks/starvation_guard.h"

namespace redisync::detail {

std::string rwlock_channel(const std::string& name) {
  return "redisson_rwlock:" + sync::hash_tag(name);
}
std::string rwlock_marker_prefix(const std::string& name, const std::string& reader_field) {
  return sync::hash_tag(name) + ":" + reader_field + ":rwlock_timeout";
}
std::string rwlock_grant_key(const std::string& name) {
  return "redisync_rwlock_grant:" + sync::hash_tag(name);
}
std::string rwlock_grant_id_key(const std::string& name) {
  return "redisync_rwlock_grant_id:" + sync::hash_tag(name);
}
std::string rwlock_readers_key(const std::string& name) {
  return "redisync_rwlock_readers:" + sync::hash_tag(name);
}
std::string rwlock_guard_key(const std::string& name) {
  return "redisync_rwlock_guard:" + sync::hash_tag(name);
}

namespace {

// What both sides wait on: the lock's one channel.
class RwLockSteps : public HoldCountSteps {
 public:
  using HoldCountSteps::HoldCountSteps;
  std::string channel() const override { return rwlock_channel(name_); }
};

class ReadLockSteps final : public RwLockSteps {
 public:
  ReadLockSteps(std::shared_ptr<ClientCore> core, KindPtr kind, std::string name,
                std::int64_t owner, Duration lease, std::optional<sync::Clock::time_point> deadline)
      : RwLockSteps(std::move(core), std::move(kind), std::move(name), owner, lease),
        script_(&publish_guarded(*core_, lua::rwlock_read_acquire)),
        grant_mode_(core_->config().handoff == Handoff::grant),
        deadline_(deadline) {}

  const lua::Script& script() const override { return *script_; }
  std::vector<std::string> keys() const override {
    std::vector<std::string> keys{name_, rwlock_marker_prefix(name_, field())};
    if (grant_mode_) keys.push_back(rwlock_readers_key(name_));  // keeps writers out
    return keys;
  }
  std::vector<std::string> args() override {
    const std::string field = this->field();
    std::vector<std::string> args{std::to_string(lease_.count()), field, field + ":write"};
    if (grant_mode_) {
      // How long the readers key is to live (rwlock_read_acquire.lua): the grant lease, cut
      // to what is left of the wait ("0" once none is: a reader that will not wait keeps no
      // writer out).
      Duration period = core_->config().grant_lease;
      if (deadline_) {
        const auto left = std::chrono::floor<Duration>(*deadline_ - sync::Clock::now());
        period = std::clamp(left, Duration{0}, period);
      }
      args.push_back(std::to_string(period.count()));
    }
    // Refused before any write when this user may not publish the release's message.
    return publish_guarded_args(*core_, std::move(args), rwlock_channel(name_), name_);
  }
  sync::AttemptResult parse(const net::Reply& reply) override { return parse_nil_or_ttl(reply); }

 private:
  const lua::Script* script_;  // the step behind the publish guard
  bool grant_mode_;
  std::optional<sync::Clock::time_point> deadline_;
};

class WriteLockSteps final : public RwLockSteps {
 public:
  WriteLockSteps(std::shared_ptr<ClientCore> core, KindPtr kind, std::string name,
                 std::int64_t owner, Duration lease,
                 std::optional<sync::Clock::time_point> deadline,
                 std::shared_ptr<sync::GrantLink> link)
      : RwLockSteps(std::move(core), std::move(kind), std::move(name), owner, lease),
        script_(&publish_guarded(*core_, link_script(link != nullptr))),
        deadline_(deadline),
        link_(std::move(link)) {
    // Wake mode: the starvation guard, as Lock's: a writer that has waited longer than
    // Config::starvation_guard claims the next turn. Grant mode has none (a registered writer
    // is granted the lock in turn).
    if (const Duration after = starvation_guard_after(*core_); !link_ && after > Duration{0}) {
      guard_.emplace(after);
    }
    if (link_) link_->deregister = {"ZREM", rwlock_grant_key(name_), writer()};
  }

  void give_up() override {
    if (link_) {
      return grant_give_up_step(core_, link_,
                                {name_, rwlock_channel(name_), rwlock_grant_key(name_),
                                 rwlock_grant_id_key(name_), sync::grant_mark_key(name_),
                                 sync::grant_channel_prefix(name_), rwlock_readers_key(name_)},
                                {"1"})();
    }
    if (guard_) guard_->give_up(*core_, rwlock_guard_key(name_), writer());
  }

  const lua::Script& script() const override { return *script_; }
  std::vector<std::string> keys() const override {
    std::vector<std::string> keys{name_};
    if (guard_) keys.push_back(rwlock_guard_key(name_));
    if (link_) {
      keys.push_back(rwlock_grant_key(name_));
      keys.push_back(rwlock_grant_id_key(name_));
      keys.push_back(sync::grant_mark_key(name_));
      keys.push_back(rwlock_readers_key(name_));  // a free lock is the waiting readers' turn
    }
    return keys;
  }
  std::vector<std::string> args() override {
    const std::string lease = std::to_string(lease_.count());
    std::vector<std::string> args{lease, writer(), field()};
    if (link_) {
      auto grant = link_->next_attempt(deadline_);
      args.push_back(std::move(grant.period));
      args.push_back(std::move(grant.id));
      args.push_back(std::move(grant.attempt));
    } else if (guard_) {
      args.insert(args.end(), {"0", "0"});
      args = guard_->args(std::move(args), 3);  // ARGV[4], ARGV[5]
    }
    // Refused before any write when this user may not publish the release's message.
    return publish_guarded_args(*core_, std::move(args), rwlock_channel(name_), name_);
  }
  sync::AttemptResult parse(const net::Reply& reply) override {
    if (reply.is_string() && reply.str == "upgrade") {
      throw UpgradeError("redisync: " + what() + ": owner " + std::to_string(owner_) +
                         " holds the read lock; waiting for the write lock would never end "
                         "(release the read lock first)");
    }
    if (link_) return read_grant_reply(*link_, reply);  // -3: took its grant
    const auto result = parse_nil_or_ttl(reply);
    return guard_ ? guard_->parse(result) : result;
  }

 protected:
  const sync::GrantLink* grant_link() const override { return link_.get(); }

 private:
  static const lua::Script& link_script(bool grant) {
    return grant ? lua::rwlock_write_grant_acquire : lua::rwlock_write_acquire;
  }
  std::string writer() const { return field() + ":write"; }

  const lua::Script* script_;  // the step behind the publish guard
  std::optional<sync::Clock::time_point> deadline_;
  std::shared_ptr<sync::GrantLink> link_;
  std::optional<StarvationGuard> guard_;  // wake mode, Config::starvation_guard on
};

}  // namespace

std::shared_ptr<HoldCountSteps> read_lock_steps(const std::shared_ptr<ClientCore>& core,
                                                const KindPtr& kind, const std::string& name,
                                                std::int64_t owner, Duration lease,
                                                std::optional<sync::Clock::time_point> deadline) {
  return std::make_shared<ReadLockSteps>(core, kind, name, owner, lease, deadline);
}

std::shared_ptr<HoldCountSteps> write_lock_steps(const std::shared_ptr<ClientCore>& core,
                                                 const KindPtr& kind, const std::string& name,
                                                 std::int64_t owner, Duration lease,
                                                 std::optional<sync::Clock::time_point> deadline,
                                                 std::shared_ptr<sync::GrantLink> link) {
  return std::make_shared<WriteLockSteps>(core, kind, name, owner, lease, deadline,
                                          std::move(link));
}

}  // namespace redisync::detail
