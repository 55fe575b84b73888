// SPDX-License-Identifier: Apache-2.0
// MultiLock members over the lock kinds (docs/wire-format.md §6).
#include "sync/multi/multi_lock_member.h"

#include <asio/post.hpp>
#include <charconv>

#include "lua/scripts.h"
#include "net/server_text.h"
#include "redisync/multi_lock.h"
#include "redisync/read_write_lock.h"
#include "sync/client_core.h"
#include "sync/identity.h"
#include "sync/locks/lock_kind.h"
#include "sync/multi/timer_slot.h"

namespace redisync::detail {

/// The one door into BasicLock's internals (its friend).
struct LockAccess {
  static const std::shared_ptr<ClientCore>& core(const BasicLock& lock) { return lock.core_; }
  static const KindPtr& kind(const BasicLock& lock) { return lock.kind_; }
};

namespace {

// Any lock kind (lock, fair, fenced, spin, read, write): the shared flows of lock_kind.h.
class KindMember final : public MultiLockMember {
 public:
  explicit KindMember(const BasicLock& lock)
      : MultiLockMember(LockAccess::core(lock), lock.name()), kind_(LockAccess::kind(lock)) {}

  std::string describe() const override { return kind_->describe(*core(), name()); }
  std::string noun() const override { return kind_->noun(); }

  void acquire(std::int64_t owner, Duration lease, Duration wait, AcquiredDone done,
               std::shared_ptr<CancelSignal> cancel) const override {
    // run_acquire completes on the I/O thread right after it counted the hold.
    auto told = [core = core(), key = hold_key(), owner, done = std::move(done)](
                    std::exception_ptr error, bool acquired) {
      done(error, acquired, acquired ? hold_lineage(core, key, owner) : 0);
    };
    after_undo(owner, [core = core(), kind = kind_, name = name(), owner, lease, wait,
                       told = std::move(told), cancel = std::move(cancel)]() mutable {
      run_acquire(core, kind, name, owner, lease, wait, std::move(told), nullptr,
                  std::move(cancel));
    });
  }
  void release(std::int64_t owner, ReleaseDone done) const override {
    run_release(core(), kind_, name(), owner, std::move(done));
  }

 protected:
  std::string hold_key() const override { return kind_->hold_key(name()); }
  sync::RenewalKey renewal_key(std::int64_t owner) const override {
    return kind_->hold_ref(*core(), name(), owner).renewal;
  }
  std::string field(std::int64_t owner) const override {
    return core()->owner_field(owner) + kind_->field_suffix();
  }
  void raw_release_io(std::int64_t owner, Duration lease, const std::string& record,
                      ReplyDone done) const override {
    kind_->release_step(core(), name(), kind_->hold_ref(*core(), name(), owner), lease, record,
                        std::move(done));
  }

 private:
  KindPtr kind_;
};

}  // namespace

void MultiLockMember::probe(ReplyDone on_done) const {
  auto core = core_;
  core->post_start(
      std::move(on_done), [](auto& late) { late(ClientCore::closed_error(), net::Reply{}); },
      [core, name = name_](auto done) {
        core->executor().execute({"PTTL", name}, done, net::Retry::never);
      });
}

void MultiLockMember::note_expiry(ClientCore& core, Hold& hold, const sync::RenewalKey& renewal,
                                  Duration lease, sync::Clock::time_point sent) {
  hold.lease = lease;
  // The walk took this hold with its own (walking) lease; the key now ends `lease` after the
  // PEXPIRE: that is this hold's lease for partial releases (remaining_lease) and for its
  // local deadline. Hold::leases kept the walking lease, and the watchdog its deadline: the
  // holder was told "lost" too early (lease > walking lease) or after the key had expired.
  if (!hold.leases.empty() && !hold.leases.back().watchdog) {
    hold.leases.back() = Hold::Lease{false, sent + lease, sent, lease};
  }
  if (renewed(hold)) return;  // still renewed by the watchdog: its deadline follows renewals
  core.watchdog().fix(renewal, lease, sent);
}

void MultiLockMember::cap_fixed_leases(Hold& hold, Duration lease, sync::Clock::time_point sent) {
  const auto cut = sync::local_deadline(sent, lease);
  for (auto& l : hold.leases) {
    if (!l.watchdog && sync::local_deadline(l.sent, l.lease) > cut) {
      l = Hold::Lease{false, sent + lease, sent, lease};
    }
  }
}

bool MultiLockMember::renewed(const Hold& hold) {
  for (const auto& l : hold.leases) {
    if (l.watchdog) return true;
  }
  return false;
}

void MultiLockMember::set_expiry(std::int64_t owner, Duration lease,
                                 std::function<void(bool)> on_done) const {
  auto core = core_;
  const std::string key = hold_key();
  const sync::RenewalKey renewal = renewal_key(owner);
  core->post_start(
      std::move(on_done), [](auto& late) { late(false); },
      [core, name = name_, key, field = field(owner), renewal, owner, lease](auto done) {
        auto it = core->holds().find({key, owner});
        // A member taken by a grant whose extension is still to be sent: the extension sets
        // this lease instead of the hold's walking lease (and ends the grant), so nothing
        // sent later overrides it (issue 36).
        if (it != core->holds().end() && it->second.grant_extension) {
          auto extension = std::move(it->second.grant_extension);
          return (*extension)(lease, false,
                           [core, key, renewal, owner, lease, done](bool ok,
                                                                     sync::Clock::time_point sent) {
                             auto held = core->holds().find({key, owner});
                             if (ok && held != core->holds().end()) {
                               note_expiry(*core, held->second, renewal, lease, sent);
                             }
                             done(ok);
                           });
        }
        const auto sent = sync::Clock::now();  // the key's new expiry counts from no earlier
        const bool watchdog_kept = it != core->holds().end() && renewed(it->second);
        if (it != core->holds().end()) {
          // The PEXPIRE may run although its reply is lost: from now on the local deadline is
          // no later than the new lease's. A hold the watchdog renews keeps its renewals, and
          // the key is not shortened under them (multi_lock_member_expiry.lua).
          if (!watchdog_kept) {
            core->watchdog().cap(renewal, lease, sent);
            cap_fixed_leases(it->second, lease, sent);
          }
          ++it->second.lease_updates;  // an extension answering later does not move it later
        }
        auto answered = [core, key, renewal, owner, lease, sent, done](std::exception_ptr error,
                                                                        net::Reply reply) {
          const bool ok = !error && reply.is_integer() && reply.integer == 1;
          if (ok) {
            auto held = core->holds().find({key, owner});
            if (held != core->holds().end()) {
              note_expiry(*core, held->second, renewal, lease, sent);
            }
          }
          done(ok);
        };
        // Never a plain PEXPIRE: by now the walk's hold may have expired and the key be
        // another owner's (multi_lock_member_expiry.lua sets it only under our field).
        core->executor().eval(lua::multi_lock_member_expiry, {name},
                              {std::to_string(lease.count()), field, watchdog_kept ? "1" : "0"},
                              std::move(answered), net::Retry::always);
      });
}

void MultiLockMember::undo_possible_hold(std::int64_t owner) const {
  asio::post(core_->io(), [self = shared_from_this(), owner] { self->undo_when_settled(owner, 0); });
}

bool MultiLockMember::acquiring(std::int64_t owner) const {
  return core_->acquiring().contains({hold_key(), owner});  // entries leave at zero
}

long long MultiLockMember::local_count(std::int64_t owner) const {
  return core_->local_hold_count({hold_key(), owner});
}

void MultiLockMember::undo_when_settled(std::int64_t owner, int deferrals) const {
  // An acquisition of the same owner under way (the next walk's, or the late one itself) may
  // have run on the server without being counted here yet: the server's count would then be
  // one above ours because of it, and the undo would take the hold that acquisition is about
  // to report (the walk then succeeds on a member that is gone). Decide once none is.
  // And one undo of this hold at a time (ClientCore::undoing): two that read the same extra
  // hold would both release it, the second a hold the owner counts.
  std::pair<std::string, std::int64_t> id{hold_key(), owner};
  if (acquiring(owner) || core_->undoing().contains(id)) return defer_undo(owner, deferrals);
  core_->undoing().insert(id);
  auto self = shared_from_this();
  auto done = [self, id] { self->core_->undoing().erase(id); };
  if (local_count(owner) == 0) return run_raw_release_io(owner, std::move(done));
  core_->executor().execute(
      {"HGET", name_, field(owner)},
      [self, owner, deferrals, done](std::exception_ptr error, net::Reply reply) {
        if (self->acquiring(owner)) {
          done();
          return self->defer_undo(owner, deferrals);
        }
        long long count = -1;
        if (!error && reply.is_string() && !net::parse_decimal(reply.str, count)) count = -1;
        // Counted now, not when asked: an acquisition that completed meanwhile is in both.
        if (count == self->local_count(owner) + 1) return self->run_raw_release_io(owner, done);
        done();
      },
      net::Retry::always);
}

void MultiLockMember::after_undo(std::int64_t owner, std::function<void()> start) const {
  asio::post(core_->io(), [self = shared_from_this(), owner, start = std::move(start)]() mutable {
    self->start_after_undo(owner, std::move(start), 0);
  });
}

void MultiLockMember::start_after_undo(std::int64_t owner, std::function<void()> start,
                                       int waits) const {
  // Every 10 ms while an undo's release of this hold is unanswered, for at most a minute (the
  // release's own retries end far sooner).
  constexpr int kMaxWaits = 6000;
  if (waits >= kMaxWaits || !core_->undoing().contains({hold_key(), owner})) return start();
  TimerSlot::arm(core_->io(), Duration{10},
                 [self = shared_from_this(), owner, start = std::move(start), waits]() mutable {
                   self->start_after_undo(owner, std::move(start), waits + 1);
                 });
}

void MultiLockMember::defer_undo(std::int64_t owner, int deferrals) const {
  // Every 25 ms for at most a minute (a member's acquisition waits at most the composite's
  // wait); past that the lease bounds what the undo would have ended.
  constexpr int kMaxDeferrals = 2400;
  if (deferrals >= kMaxDeferrals) return;
  TimerSlot::arm(core_->io(), Duration{25}, [self = shared_from_this(), owner, deferrals] {
    self->undo_when_settled(owner, deferrals + 1);
  });
}

void MultiLockMember::run_raw_release_io(std::int64_t owner, std::function<void()> then) const {
  auto core = core_;
  const std::string record = release_record_key(name_);
  auto it = core->holds().find({hold_key(), owner});
  const Duration lease = it != core->holds().end() && it->second.lease.count() > 0
                             ? it->second.lease
                             : core->config().lock_watchdog_timeout;
  raw_release_io(owner, lease, record,
                 [core, record, then = std::move(then)](std::exception_ptr error, net::Reply) {
                   // Deleted in a batch once the release completed, as every release's record
                   // (§1.8).
                   if (!error) core->release_records().add(record);
                   then();
                 });
}

std::uint64_t MultiLockMember::lineage(std::int64_t owner) const {
  return hold_lineage(core_, hold_key(), owner);
}

void MultiLockMember::is_held(std::int64_t owner, AcquireDone on_done) const {
  auto core = core_;
  core->post_start(
      std::move(on_done), [](auto& late) { late(ClientCore::closed_error(), false); },
      [self = shared_from_this(), this, core, owner](auto done) {
        core->executor().execute(
            {"HEXISTS", name_, field(owner)},
            [done](std::exception_ptr error, net::Reply reply) {
              done(error, !error && reply.is_integer() && reply.integer == 1);
            },
            net::Retry::never);  // a query: a dead member must not hold the answer up
      });
}

}  // namespace redisync::detail

namespace redisync {

AnyLock::AnyLock(const BasicLock& lock) : impl_(std::make_shared<detail::KindMember>(lock)) {}
AnyLock::AnyLock(const ReadWriteLock& lock)
    : AnyLock(static_cast<const BasicLock&>(lock.write_lock())) {}

const std::string& AnyLock::name() const { return impl_->name(); }
std::string AnyLock::describe() const { return impl_->describe(); }

}  // namespace redisync
