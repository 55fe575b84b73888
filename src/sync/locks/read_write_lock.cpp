// SPDX-License-Identifier: Apache-2.0
// redisync::ReadWriteLock: Redisson's read-write lock (docs/wire-format.md §5).
#include "redisync/read_write_lock.h"

#include "lua/scripts.h"
#include "sync/acquire/grant.h"
#include "sync/identity.h"
#include "sync/locks/lock_kind.h"
#include "sync/locks/rw_lock_steps.h"

namespace redisync {

namespace {

using detail::rwlock_channel;
using detail::rwlock_grant_id_key;
using detail::rwlock_grant_key;
using detail::rwlock_marker_prefix;
using detail::rwlock_readers_key;

// The release's grant-mode keys and argument (none in wake mode).
void add_grant(const detail::ClientCore& core, const std::string& name,
               std::vector<std::string>& keys, std::vector<std::string>& args) {
  if (core.config().handoff != Handoff::grant) return;
  keys.push_back(rwlock_grant_key(name));
  keys.push_back(rwlock_grant_id_key(name));
  keys.push_back(sync::grant_mark_key(name));
  keys.push_back(sync::grant_channel_prefix(name));
  keys.push_back(rwlock_readers_key(name));
  args.push_back(std::to_string(core.config().grant_lease.count()));
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
};

class ReadKind final : public RwKind {
 public:
  std::string noun() const override { return "read lock"; }
  std::string hold_suffix() const override { return kReadSuffix; }
  sync::RenewalKind renewal_kind() const override { return sync::RenewalKind::rwlock_read; }
  detail::ReleaseReply release_reply() const override { return detail::ReleaseReply::whole_lock; }

  void start_loop(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                  std::int64_t owner, detail::LoopStart start) const override {
    auto steps =
        detail::read_lock_steps(core, shared_from_this(), name, owner, start.lease, start.deadline);
    detail::start_pubsub_loop(core, std::move(start), std::move(steps));
  }

  void release_step(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                    const detail::HoldRef& hold, Duration lease, const std::string& record,
                    net::ReplyHandler handler) const override {
    std::vector<std::string> keys{name, rwlock_channel(name),
                                  rwlock_marker_prefix(name, hold.field), sync::hash_tag(name),
                                  record};
    // A read hold's lease is its own marker's: only "is this the owner's last hold" (lease 0,
    // release_now) matters here.
    std::vector<std::string> args{"0", hold.field,
                                  std::to_string(detail::lock_release_record_ttl_ms(*core)),
                                  core->publish_command(), lease.count() == 0 ? "1" : "0"};
    add_grant(*core, name, keys, args);  // the last reader's release grants a waiting writer
    detail::acked_release(core, hold, lua::rwlock_read_release, std::move(keys), std::move(args),
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
                  std::int64_t owner, detail::LoopStart start) const override {
    // Grant mode (sync/acquire/grant.h), a fresh acquisition: a failed attempt registers the
    // writer; a release that frees the lock may grant it (reply -3 when an attempt finds the
    // grant first).
    auto link = detail::grant_link(core, *this, name, owner);
    auto steps = detail::write_lock_steps(core, shared_from_this(), name, owner, start.lease,
                                          start.deadline, link);
    detail::start_pubsub_loop(core, std::move(start), std::move(steps), std::move(link));
  }

  void release_step(const std::shared_ptr<detail::ClientCore>& core, const std::string& name,
                    const detail::HoldRef& hold, Duration lease, const std::string& record,
                    net::ReplyHandler handler) const override {
    std::vector<std::string> keys{name, rwlock_channel(name), record};
    std::vector<std::string> args{"1", std::to_string(lease.count()), hold.field,
                                  std::to_string(detail::lock_release_record_ttl_ms(*core)),
                                  core->publish_command()};
    add_grant(*core, name, keys, args);
    detail::acked_release(core, hold, lua::rwlock_write_release, std::move(keys), std::move(args),
                          record, std::move(handler));
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
