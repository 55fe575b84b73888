// SPDX-License-Identifier: Apache-2.0
// redisync::ReadWriteLock: Redisson's read-write lock (docs/wire-format.md §5).
#include "redisync/read_write_lock.h"

#include <algorithm>
#include <chrono>

#include "lua/scripts.h"
#include "lua/with_preludes.h"
#include "sync/acquire/grant.h"
#include "sync/identity.h"
#include "sync/locks/lock_kind.h"
#include "sync/locks/starvation_guard.h"

namespace redisync {

namespace {

std::string rwlock_channel(const std::string& name) {
  return "redisson_rwlock:" + sync::hash_tag(name);
}

// "TAG(N):<reader field>:rwlock_timeout": a reader's markers are this plus ":<k>" (§5.1).
std::string marker_prefix(const std::string& name, const std::string& reader_field) {
  return sync::hash_tag(name) + ":" + reader_field + ":rwlock_timeout";
}

// Grant mode (sync/acquire/grant.h): the writers waiting for a grant (sorted set, member = W,
// score = registration deadline). Its own key, not Lock's "redisync_lock_grant:TAG(N)": a
// grant here is a write hold (mode "write" beside W), which a Lock release on the same name
// must never hand out. Readers never register (they are never granted: see rw_readers_key).
std::string rw_grant_key(const std::string& name) {
  return "redisync_rwlock_grant:" + sync::hash_tag(name);
}
// Their grant ids (hash, W -> "<grant id>:<attempt>"), as Lock's grant_id_key.
std::string rw_grant_id_key(const std::string& name) {
  return "redisync_rwlock_grant_id:" + sync::hash_tag(name);
}
// Grant mode: set while a redisync reader refused by a write hold still waits (string, for a
// grant lease after its last attempt). A release that frees the lock then wakes the readers
// instead of granting it, and writers leave the free lock to them: without it, registered
// writers handed the lock to each other and a reader never got in.
std::string rw_readers_key(const std::string& name) {
  return "redisync_rwlock_readers:" + sync::hash_tag(name);
}
// Wake mode: the starvation guard's claim (sync/locks/starvation_guard.h), a writer field W.
// Its own key, as the grant keys: Lock's guard on the same name is another lock's turn.
std::string rw_guard_key(const std::string& name) {
  return "redisync_rwlock_guard:" + sync::hash_tag(name);
}

// The releases: the shared release-record sub-steps, and in grant mode the pass-on.
template <const lua::Script& Body>
const lua::Script& release_script() {
  return lua::with_preludes<Body, lua::release_record, lua::grant_pass_on>();
}

// The release's grant-mode keys and argument (none in wake mode).
void add_grant(const detail::ClientCore& core, const std::string& name,
               std::vector<std::string>& keys, std::vector<std::string>& args) {
  if (core.config().handoff != Handoff::grant) return;
  keys.push_back(rw_grant_key(name));
  keys.push_back(rw_grant_id_key(name));
  keys.push_back(sync::grant_mark_key(name));
  keys.push_back(sync::grant_channel_prefix(name));
  keys.push_back(rw_readers_key(name));
  args.push_back(std::to_string(core.config().grant_lease.count()));
}

// A grant-mode reader's attempt arguments: the fixed ones, then how long the readers key is
// to live (rwlock_read_acquire.lua): the grant lease, cut to what is left of the wait ("0"
// once none is: a reader that will not wait keeps no writer out).
detail::ArgsFn reader_args(const detail::ClientCore& core, std::vector<std::string> fixed,
                           std::optional<sync::Clock::time_point> deadline) {
  return [fixed = std::move(fixed), lease = core.config().grant_lease, deadline] {
    Duration period = lease;
    if (deadline) {
      const auto left = std::chrono::floor<Duration>(*deadline - sync::Clock::now());
      period = std::clamp(left, Duration{0}, lease);
    }
    std::vector<std::string> args = fixed;
    args.push_back(std::to_string(period.count()));
    return args;
  };
}

const std::string kReadSuffix = " (read lock)";
const std::string kWriteSuffix = " (write lock)";

// What both sides share: the hash, the channel, the queries.
class RwKind : public detail::LockKind {
 public:
  std::vector<std::string> force_hold_keys(const std::string& name) const override {
    return {name + kReadSuffix, name + kWriteSuffix};  // deleting the hash ends both sides
  }

  void is_locked(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                 detail::BoolDone done) const override {
    const std::string what = "querying " + describe(*core, name);
    core->executor().eval(
        lua::rwlock_is_locked, {name}, {side()},
        [done, what](std::exception_ptr error, net::Reply reply) {
          error = detail::reply_error(error, reply, what);
          done(error, !error && reply.integer == 1);
        },
        net::Retry::always);
  }

  void force_step(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  net::ReplyHandler handler) const override {
    core->executor().eval(lua::rwlock_force_release, {name, rwlock_channel(name)},
                          {side(), side() == "read" ? "0" : "1", core->publish_command()},
                          std::move(handler), net::Retry::always);
  }

 protected:
  virtual std::string side() const = 0;  // "read" or "write"

  void start_rw_loop(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                     std::int64_t owner, detail::LoopStart start,
                     sync::AcquireLoop::AttemptFn attempt,
                     std::function<void()> give_up = nullptr,
                     std::shared_ptr<sync::GrantLink> grant = nullptr) const {
    auto recheck = detail::hold_count_recheck(core, shared_from_this(), name, owner, attempt);
    // Read and write waiters share the channel: "0" wakes one, "1" (write release) all.
    detail::start_pubsub_loop(core, rwlock_channel(name), std::move(start), std::move(attempt),
                              std::move(give_up), std::move(recheck),
                              detail::hold_count_check(core, shared_from_this(), name, owner),
                              std::move(grant));
  }
};

class ReadKind final : public RwKind {
 public:
  std::string noun() const override { return "read lock"; }
  std::string hold_suffix() const override { return kReadSuffix; }
  sync::RenewalKind renewal_kind() const override { return sync::RenewalKind::rwlock_read; }
  detail::ReleaseReply release_reply() const override { return detail::ReleaseReply::whole_lock; }

  void start_loop(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  std::int64_t owner, detail::LoopStart start) const override {
    const Duration effective_lease = start.lease;
    const auto deadline = start.deadline;
    const std::string field = core->owner_field(owner);
    std::vector<std::string> keys{name, marker_prefix(name, field)};
    std::vector<std::string> fixed{std::to_string(effective_lease.count()), field,
                                   field + ":write"};
    detail::ArgsFn args = detail::fixed_args(fixed);
    if (core->config().handoff == Handoff::grant) {  // a refused reader keeps writers out
      keys.push_back(rw_readers_key(name));
      args = reader_args(*core, std::move(fixed), deadline);
    }
    start_rw_loop(
        core, name, owner, std::move(start),
        detail::script_attempt(
            core, detail::publish_guarded(*core, lua::rwlock_read_acquire), std::move(keys),
            detail::publish_guarded_args(*core, std::move(args), rwlock_channel(name), name),
            describe(*core, name), nullptr,
            detail::release_undo(core, shared_from_this(), name, owner, effective_lease)));
  }

  void release_step(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                    const detail::HoldRef& hold, Duration lease, const std::string& record,
                    net::ReplyHandler handler) const override {
    std::vector<std::string> keys{name, rwlock_channel(name), marker_prefix(name, hold.field),
                                  sync::hash_tag(name), record};
    // A read hold's lease is its own marker's: only "is this the owner's last hold" (lease 0,
    // release_now) matters here.
    std::vector<std::string> args{"0", hold.field,
                                  std::to_string(detail::lock_release_record_ttl_ms(*core)),
                                  core->publish_command(), lease.count() == 0 ? "1" : "0"};
    add_grant(*core, name, keys, args);  // the last reader's release grants a waiting writer
    detail::acked_release(core, hold, release_script<lua::rwlock_read_release>(), std::move(keys),
                          std::move(args), record, std::move(handler));
  }

 protected:
  std::string side() const override { return "read"; }
};

class WriteKind final : public RwKind {
 public:
  std::string noun() const override { return "write lock"; }
  std::string hold_suffix() const override { return kWriteSuffix; }
  std::string field_suffix() const override { return ":write"; }

  void start_loop(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  std::int64_t owner, detail::LoopStart start) const override {
    const Duration effective_lease = start.lease;
    const auto deadline = start.deadline;
    const std::string reader = core->owner_field(owner);
    const std::string writer = reader + ":write";
    const std::string what = describe(*core, name);
    const std::string lease = std::to_string(effective_lease.count());
    const auto self = shared_from_this();
    detail::ReplyParser nil_or_ttl = detail::parse_nil_or_ttl;
    // Grant mode (sync/acquire/grant.h), a fresh acquisition: a failed attempt registers the
    // writer in rw_grant_key; a release that frees the lock may grant it (reply -3 when an
    // attempt finds the grant first).
    auto link = detail::grant_link(core, *this, name, owner);
    std::vector<std::string> keys{name};
    detail::ArgsFn args = detail::fixed_args({lease, writer, reader});
    std::function<void()> give_up;
    // Wake mode: the starvation guard (rwlock_write_acquire.lua), as Lock's: a writer that has
    // waited longer than Config::starvation_guard claims the next turn. Grant mode has none (a
    // registered writer is granted the lock in turn).
    const Duration after = detail::starvation_guard_after(*core);
    if (!link && after > Duration{0}) {
      auto guard = std::make_shared<detail::StarvationGuard>(after);
      keys.push_back(rw_guard_key(name));
      args = [guard, fixed = std::vector<std::string>{lease, writer, reader, "0", "0"}] {
        return guard->args(fixed, 3);  // ARGV[4], ARGV[5]
      };
      nil_or_ttl = [guard](const net::Reply& reply) {
        return guard->parse(detail::parse_nil_or_ttl(reply));
      };
      give_up = detail::starvation_guard_drop(core, guard, rw_guard_key(name), writer);
    }
    if (link) {
      link->deregister = {"ZREM", rw_grant_key(name), writer};
      keys.push_back(rw_grant_key(name));
      keys.push_back(rw_grant_id_key(name));
      keys.push_back(sync::grant_mark_key(name));
      keys.push_back(rw_readers_key(name));  // a free lock is the waiting readers' turn
      args = [link, lease, writer, reader, deadline] {
        auto grant = link->next_attempt(deadline);
        return std::vector<std::string>{lease,        writer,   reader, std::move(grant.period),
                                        std::move(grant.id), std::move(grant.attempt)};
      };
      nil_or_ttl = detail::grant_parse(link);
    }
    auto attempt = detail::script_attempt(
        core,
        detail::publish_guarded(*core, link ? lua::with_preludes<lua::rwlock_write_acquire,
                                                                  lua::grant_pass_on>()
                                             : lua::rwlock_write_acquire),
        std::move(keys),
        // Refused before any write when this user may not publish the release's message.
        detail::publish_guarded_args(*core, std::move(args), rwlock_channel(name), name), what,
        [what, owner, nil_or_ttl](const net::Reply& reply) {
          if (reply.is_string() && reply.str == "upgrade") {
            throw UpgradeError("redisync: " + what + ": owner " + std::to_string(owner) +
                               " holds the read lock; waiting for the write lock would never "
                               "end (release the read lock first)");
          }
          return nil_or_ttl(reply);
        },
        detail::release_undo(core, self, name, owner, effective_lease));
    if (link) {
      give_up = detail::grant_give_up_step(
          core, link,
          {name, rwlock_channel(name), rw_grant_key(name), rw_grant_id_key(name),
           sync::grant_mark_key(name), sync::grant_channel_prefix(name), rw_readers_key(name)},
          {"1"});
    }
    start_rw_loop(core, name, owner, std::move(start), std::move(attempt),
                  std::move(give_up), std::move(link));
  }

  void release_step(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                    const detail::HoldRef& hold, Duration lease, const std::string& record,
                    net::ReplyHandler handler) const override {
    std::vector<std::string> keys{name, rwlock_channel(name), record};
    std::vector<std::string> args{"1", std::to_string(lease.count()), hold.field,
                                  std::to_string(detail::lock_release_record_ttl_ms(*core)),
                                  core->publish_command()};
    add_grant(*core, name, keys, args);
    detail::acked_release(core, hold, release_script<lua::rwlock_write_release>(),
                          std::move(keys), std::move(args), record, std::move(handler));
  }

 protected:
  std::string side() const override { return "write"; }
};

}  // namespace

ReadLock::ReadLock(std::shared_ptr<detail::ClientCore> core, std::string name)
    : BasicLock(std::move(core), std::move(name), detail::shared_kind<ReadKind>()) {}

WriteLock::WriteLock(std::shared_ptr<detail::ClientCore> core, std::string name)
    : BasicLock(std::move(core), std::move(name), detail::shared_kind<WriteKind>()) {}

ReadWriteLock::ReadWriteLock(std::shared_ptr<detail::ClientCore> core, std::string name)
    : read_(core, name), write_(core, name) {}

}  // namespace redisync
