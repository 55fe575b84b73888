// redisync::ReadWriteLock: Redisson's read-write lock (docs/wire-format.md §5).
#include "redisync/read_write_lock.h"

#include "lua/scripts.h"
#include "lua/with_preludes.h"
#include "sync/identity.h"
#include "sync/locks/lock_kind.h"

namespace redisync {

namespace {

std::string rwlock_channel(const std::string& name) {
  return "redisson_rwlock:" + sync::hash_tag(name);
}

// "TAG(N):<reader field>:rwlock_timeout": a reader's markers are this plus ":<k>" (§5.1).
std::string marker_prefix(const std::string& name, const std::string& reader_field) {
  return sync::hash_tag(name) + ":" + reader_field + ":rwlock_timeout";
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
                     std::int64_t owner, std::optional<sync::Clock::time_point> deadline,
                     sync::AcquireLoop::AttemptFn attempt, detail::AcquireDone done) const {
    auto recheck = detail::hold_count_recheck(core, shared_from_this(), name, owner, attempt);
    // Read and write waiters share the channel: "0" wakes one, "1" (write release) all.
    detail::start_pubsub_loop(core, rwlock_channel(name), deadline, std::move(attempt),
                              std::move(done), nullptr, std::move(recheck),
                              detail::hold_count_check(core, shared_from_this(), name, owner));
  }
};

class ReadKind final : public RwKind {
 public:
  std::string noun() const override { return "read lock"; }
  std::string hold_suffix() const override { return kReadSuffix; }
  sync::RenewalKind renewal_kind() const override { return sync::RenewalKind::rwlock_read; }
  detail::ReleaseReply release_reply() const override { return detail::ReleaseReply::whole_lock; }

  void start_loop(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  std::int64_t owner, Duration effective_lease, Duration /*wait*/,
                  std::optional<sync::Clock::time_point> deadline,
                  detail::AcquireDone done) const override {
    const std::string field = core->owner_field(owner);
    start_rw_loop(
        core, name, owner, deadline,
        detail::script_attempt(
            core, lua::with_publish_guard(lua::rwlock_read_acquire),
            {name, marker_prefix(name, field)},
            detail::publish_guarded_args(
                *core,
                detail::fixed_args(
                    {std::to_string(effective_lease.count()), field, field + ":write"}),
                rwlock_channel(name)),
            describe(*core, name), nullptr,
            detail::release_undo(core, shared_from_this(), name, owner, effective_lease)),
        std::move(done));
  }

  void release_step(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                    const detail::HoldRef& hold, Duration /*lease*/, const std::string& record,
                    net::ReplyHandler handler) const override {
    detail::acked_release(
        core, hold, lua::rwlock_read_release,
        {name, rwlock_channel(name), marker_prefix(name, hold.field), sync::hash_tag(name), record},
        {"0", hold.field, std::to_string(detail::lock_release_record_ttl_ms(*core)),
         core->publish_command()},
        record, std::move(handler));
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
                  std::int64_t owner, Duration effective_lease, Duration /*wait*/,
                  std::optional<sync::Clock::time_point> deadline,
                  detail::AcquireDone done) const override {
    const std::string reader = core->owner_field(owner);
    const std::string what = describe(*core, name);
    start_rw_loop(
        core, name, owner, deadline,
        detail::script_attempt(core, lua::with_publish_guard(lua::rwlock_write_acquire), {name},
                               detail::publish_guarded_args(
                                   *core,
                                   detail::fixed_args({std::to_string(effective_lease.count()),
                                                       reader + ":write", reader}),
                                   rwlock_channel(name)),
                               what,
                               [what, owner](const net::Reply& reply) {
                                 if (reply.is_string() && reply.str == "upgrade") {
                                   throw UpgradeError(
                                       "redisync: " + what + ": owner " + std::to_string(owner) +
                                       " holds the read lock; waiting for the write lock would "
                                       "never end (release the read lock first)");
                                 }
                                 return detail::parse_nil_or_ttl(reply);
                               },
                               detail::release_undo(core, shared_from_this(), name, owner,
                                                    effective_lease)),
        std::move(done));
  }

  void release_step(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                    const detail::HoldRef& hold, Duration lease, const std::string& record,
                    net::ReplyHandler handler) const override {
    detail::acked_release(core, hold, lua::rwlock_write_release,
                          {name, rwlock_channel(name), record},
                          {"1", std::to_string(lease.count()), hold.field,
                           std::to_string(detail::lock_release_record_ttl_ms(*core)),
                           core->publish_command()},
                          record, std::move(handler));
  }

 protected:
  std::string side() const override { return "write"; }
};

}  // namespace

ReadLock::ReadLock(std::shared_ptr<detail::ClientCore> core, std::string name)
    : BasicLock(std::move(core), std::move(name), std::make_shared<const ReadKind>()) {}

WriteLock::WriteLock(std::shared_ptr<detail::ClientCore> core, std::string name)
    : BasicLock(std::move(core), std::move(name), std::make_shared<const WriteKind>()) {}

ReadWriteLock::ReadWriteLock(std::shared_ptr<detail::ClientCore> core, std::string name)
    : read_(core, name), write_(core, name) {}

}  // namespace redisync
