// SPDX-License-Identifier: Apache-2.0
// The release side of the shared lock flows (docs/architecture.md "shared flows"): the
// release step with its record (sent again safely after a lost reply), the outcome and the
// hold bookkeeping, partial releases, quiet unlock and force release.
#include "sync/locks/lock_kind.h"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <algorithm>
#include <charconv>
#include <limits>
#include <optional>
#include <utility>

#include "log_line.h"
#include "lua/scripts.h"
#include "net/server_text.h"
#include "sync/durations.h"
#include "sync/identity.h"
#include "sync/metrics_report.h"
#include "sync/string_list.h"


namespace redisync::detail {

namespace {

// The release scripts record every outcome (docs/wire-format.md §1.8), "not held" (nil) as -1:
// neither Redisson's 0 and 1 nor the fair lock's 2. A copy answered from such a record says
// -1; it means what the copy that ran said, nil.
constexpr long long kRecordedNotHeld = -1;

net::Reply decode_release_reply(net::Reply reply) {
  if (reply.is_integer() && reply.integer == kRecordedNotHeld) return net::Reply{};
  return reply;
}

}  // namespace

long long lock_release_record_ttl_ms(const ClientCore& core) {
  // A record outlives every copy of its release that can still arrive. The client resends for
  // at most the retry budget (release_record_ttl_ms); a connection it gave up is reset (RST),
  // so its kernel drops an unsent copy; a copy already past this host (a proxy's or a
  // partitioned link's backlog) has no bound but the network's, taken as 60 s, or three
  // watchdog leases when longer (by then a hold of the same owner that the copy could hit has
  // long had its renewals fail on the same path). A record is one small key, and only a
  // resent release leaves one to expire: the others are swept at once.
  const long long leases = 3LL * core.config().lock_watchdog_timeout.count();
  return std::min(std::max({60'000LL, leases, core.release_record_ttl_ms()}),
                  static_cast<long long>(max_duration.count()));
}

void acked_release(const std::shared_ptr<ClientCore>& core, const HoldRef& hold,
                   const lua::Script& script, std::vector<std::string> keys,
                   std::vector<std::string> args, const std::string& record,
                   net::ReplyHandler handler) {
  if (hold.undo) {
    // Not swept (undo_acquire): its record expires, whatever copies were sent.
    return core->executor().eval(
        script, std::move(keys), std::move(args),
        [handler = std::move(handler)](std::exception_ptr error, net::Reply reply) {
          handler(std::move(error), decode_release_reply(std::move(reply)));
        },
        net::Retry::recorded);
  }
  // `resent`: shared by every copy of the release; the executor sets it when it sends the
  // release again after a copy that may have reached the server. A release no replica
  // acknowledged is sent again, up to the retry budget (the record makes a repeat harmless).
  auto resent = std::make_shared<bool>(false);
  core->executor().eval_acked(
      script, std::move(keys), std::move(args),
      [core, record, resent, handler = std::move(handler)](std::exception_ptr error,
                                                           net::Reply reply, int) {
        // A copy that may have reached the server was resent: that copy may still be on its
        // way (a connection given up is not a copy cancelled). It must find the record, so
        // the record is not swept; it expires (lock_release_record_ttl_ms).
        if (*resent && !error && !reply.is_error()) core->release_records().keep(record);
        handler(std::move(error), decode_release_reply(std::move(reply)));
      },
      net::Retry::recorded, resent, core->config().retry_attempts);
}

void hash_release_step(const std::shared_ptr<ClientCore>& core, const std::string& name,
                       const HoldRef& hold, Duration lease, const std::string& record, bool publish,
                       net::ReplyHandler handler) {
  acked_release(core, hold, lua::lock_release, sync::string_list(name, lock_channel(name), record),
                sync::string_list("0", std::to_string(lease.count()), hold.field,
                                  std::to_string(lock_release_record_ttl_ms(*core)),
                                  core->publish_command(), publish ? "1" : "0"),
                record, std::move(handler));
}

void hash_force_step(const std::shared_ptr<ClientCore>& core, const std::string& name, bool publish,
                     net::ReplyHandler handler) {
  core->executor().eval(lua::lock_force_release, {name, lock_channel(name)},
                        {"0", core->publish_command(), publish ? "1" : "0"}, std::move(handler),
                        net::Retry::always);
}

void HashLockKind::release_step(const std::shared_ptr<ClientCore>& core, const std::string& name,
                                const HoldRef& hold, Duration lease, const std::string& record,
                                net::ReplyHandler handler) const {
  if (core->config().handoff == Handoff::grant) {
    return grant_release_step(core, name, hold, lease, record, "", std::move(handler));
  }
  hash_release_step(core, name, hold, lease, record, true, std::move(handler));
}

void HashLockKind::force_step(const std::shared_ptr<ClientCore>& core, const std::string& name,
                              net::ReplyHandler handler) const {
  hash_force_step(core, name, true, std::move(handler));
}


ReleaseOutcome settle_release(ClientCore& core, const HoldRef& ref, const net::Reply& reply,
                              ReleaseReply kind) {
  auto& holds = core.holds();
  auto it = holds.find({ref.hold_key, ref.owner});
  const bool believed = it != holds.end() && it->second.count > 0;
  auto drop = [&] {
    if (it != holds.end()) holds.erase(it);
    core.watchdog().forget(ref.renewal);
  };
  if (reply.is_nil()) {
    // Not the owner on the server. If we believed we held it, it was lost.
    drop();
    return believed ? ReleaseOutcome::lost : ReleaseOutcome::not_held;
  }
  if (believed && it->second.lost && kind == ReleaseReply::whole_lock) {
    // The watchdog found the hold lost (e.g. a reader whose own markers expired while other
    // readers kept its field in the hash): the release cleaned up, the hold was lost all the
    // same (issue 22). The other kinds' replies say whether the caller's field was there when
    // the release ran, which outranks the watchdog's view (its renewal may have run after our
    // own release had, with the release's reply lost and resent).
    drop();
    return ReleaseOutcome::lost;
  }
  if (kind == ReleaseReply::own_or_absent && reply.integer == 2) {
    // The lock was already gone: ours expired (lost), or we never held it.
    drop();
    return believed ? ReleaseOutcome::lost : ReleaseOutcome::not_held;
  }
  // The release ended the latest hold; only a watchdog hold gives up its renewal (the
  // remaining ones may still need it).
  if (it == holds.end() || it->second.leases.empty() || it->second.leases.back().watchdog) {
    core.watchdog().remove(ref.renewal);
  }
  if (it != holds.end() && !it->second.leases.empty()) it->second.leases.pop_back();
  bool last = reply.integer == 1;
  // A read release answers whether the lock as a whole is still held: 1 says it was deleted,
  // and with it every hold of the caller, whatever the local count (an earlier release whose
  // answer was lost may have run: the count is then one too high).
  if (kind == ReleaseReply::whole_lock) {
    last = reply.integer == 1 || !believed || it->second.count <= 1;
  }
  if (last) {
    drop();
    return ReleaseOutcome::released;
  }
  if (it != holds.end() && --it->second.count <= 0) {
    holds.erase(it);
  } else if (it != holds.end()) {
    keep_renewal_for_remaining(core, ref, it->second);
  }
  return ReleaseOutcome::still_held;
}

void keep_renewal_for_remaining(ClientCore& core, const HoldRef& ref, Hold& hold) {
  if (hold.leases.empty()) return;
  const Hold::Lease* last_ending = nullptr;
  for (const auto& l : hold.leases) {
    if (l.watchdog) return;  // still renewed: a remaining hold needs it
    if (!last_ending || sync::local_deadline(l.sent, l.lease) >
                            sync::local_deadline(last_ending->sent, last_ending->lease)) {
      last_ending = &l;
    }
  }
  // Only fixed leases remain: renewing would keep the key forever (docs/safety.md).
  hold.watchdog = false;
  hold.lease = last_ending->lease;
  core.watchdog().fix(ref.renewal, last_ending->lease, last_ending->sent);
}

Duration remaining_lease(const Hold& hold, Duration watchdog_lease) {
  if (hold.leases.size() < 2) {
    return hold.lease.count() > 0 ? hold.lease : watchdog_lease;  // the last hold: unused
  }
  Duration need{1};
  const auto now = sync::Clock::now();
  for (std::size_t i = 0; i + 1 < hold.leases.size(); ++i) {
    const auto& l = hold.leases[i];
    need = std::max(need, l.watchdog ? watchdog_lease
                                     : std::chrono::ceil<Duration>(l.ends - now));
  }
  return need;
}

void release_now(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                 const std::string& name, std::int64_t owner, ReleaseDone done) {
  HoldRef ref = kind->hold_ref(*core, name, owner);
  auto it = core->holds().find({ref.hold_key, owner});
  // The owner's last hold, with no acquisition of it on its way: the release ends every hold
  // of the owner on the server (lease 0, docs/wire-format.md §2.3), counted or not. An
  // acquire whose reply was lost may have run (more than once, resent or queued behind a
  // stalled server); its holds would otherwise outlive this release, and the owner's next
  // acquire would re-enter and extend them.
  const bool counted = it != core->holds().end();
  const bool last =
      (!counted || it->second.count <= 1) && !core->acquiring().contains({ref.hold_key, owner});
  Duration lease = core->config().lock_watchdog_timeout;
  if (last) {
    lease = Duration{0};
  } else if (counted) {
    lease = remaining_lease(it->second, core->config().lock_watchdog_timeout);
  }
  // A release that ends the owner's last hold: while it is in flight, a loss the watchdog
  // finds (the local lease deadline passing while the reply is late) waits for its outcome
  // (Hold::releasing). Not for a read-write lock, whose release reply does not say whether
  // the caller's own hold was intact.
  if (counted && it->second.count == 1 && !it->second.lost &&
      kind->release_reply() != ReleaseReply::whole_lock) {
    it->second.releasing = true;
  }
  // What the completion needs, shared once: this is the hot path of every unlock, and the
  // handler is copied down the release chain. The error text is only built for an error.
  struct Pending {
    std::string name;
    HoldRef ref;
    std::string record;  // makes a resend after a dropped connection safe (docs/wire-format.md §1.8)
    ReleaseDone done;
  };
  auto p = std::make_shared<const Pending>(
      Pending{name, std::move(ref), release_record_key(name), std::move(done)});
  kind->release_step(
      core, p->name, p->ref, lease, p->record,
      [core, kind, p](std::exception_ptr error, net::Reply reply) {
        const HoldRef& hold = p->ref;
        if (!error && reply.is_error()) {
          error = net::server_error(reply, "releasing " + kind->describe(*core, p->name));
        }
        std::unique_ptr<std::string> deferred;  // a loss found while the release was in flight
        if (auto h = core->holds().find({hold.hold_key, hold.owner}); h != core->holds().end()) {
          h->second.releasing = false;
          deferred = std::move(h->second.deferred_loss);
        }
        if (error) {
          // Unconfirmed: the hold may have been lost, as the watchdog found.
          if (deferred) core->report_lost(hold.hold_key, hold.owner, *deferred);
          return p->done(ReleaseOutcome::failed, error);
        }
        // Confirmed (released, or still held by the remaining holds): the hold was there when
        // the release ran, so the deferred loss never happened and is dropped. A lost outcome
        // is reported by the caller (unlock_checked() raises LockLostError; unlock() tells the
        // lost-lock handler, quiet_unlock).
        core->release_records().add(p->record);
        const bool metered = core->config().metrics != nullptr;
        std::optional<sync::Clock::time_point> since;  // the hold time's start, for the hook
        if (metered) {
          auto held = core->holds().find({hold.hold_key, hold.owner});
          if (held != core->holds().end()) since = held->second.since;
        }
        const auto outcome = settle_release(*core, hold, reply, kind->release_reply());
        if (outcome == ReleaseOutcome::released) {
          metrics_released(*core, metrics_kind(kind->noun()), p->name, since);
        }
        p->done(outcome, nullptr);
      });
}

void run_release(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                 const std::string& name, std::int64_t owner, ReleaseDone on_done) {
  core->post_start(
      std::move(on_done),
      [](auto& late) { late(ReleaseOutcome::failed, detail::ClientCore::closed_error()); },
      [core, kind, name, owner](auto done) mutable { release_now(core, kind, name, owner, done); });
}

void log_quiet_unlock(const ClientCore& core, const std::string& what,
                      const std::string& why) noexcept {
  try {
    log_line(core.config(), "unlock of " + what + ": " + why);
  } catch (...) {
  }
}

void quiet_unlock(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                  const std::string& name, std::int64_t owner, std::function<void()> finished) {
  std::string hold_key = kind->hold_key(name);
  auto it = core->holds().find({hold_key, owner});
  // The watchdog reports a loss it finds itself; one found only now is reported here.
  const bool reported = it != core->holds().end() && it->second.lost;
  release_now(core, kind, name, owner,
              [core, kind, name, hold_key = std::move(hold_key), owner, reported,
               finished = std::move(finished)](ReleaseOutcome outcome, std::exception_ptr error) {
    try {
      const auto what = [&] { return kind->describe(*core, name); };
      if (outcome == ReleaseOutcome::lost && !reported) {
        core->report_lost(hold_key, owner,
                          "found at release: the lease expired or the key was removed");
      } else if (outcome == ReleaseOutcome::failed) {
        // Stop renewing the hold this unlock gave up, so the server's lease frees the lock.
        const sync::RenewalKey renewal = kind->hold_ref(*core, name, owner).renewal;
        auto& holds = core->holds();
        auto held = holds.find({hold_key, owner});
        core->watchdog().remove(renewal);
        if (held != holds.end() && --held->second.count <= 0) {
          holds.erase(held);
          core->watchdog().forget(renewal);
        }
        std::string why = "unknown error";
        try {
          if (error) std::rethrow_exception(error);
        } catch (const std::exception& e) {
          why = e.what();
        } catch (...) {
        }
        log_quiet_unlock(*core, what(),
                         "the release did not complete (" + why +
                             "); the hold is no longer renewed and the lock frees when its "
                             "lease ends");
      } else if (outcome == ReleaseOutcome::not_held) {
        log_quiet_unlock(*core, what(), "not held by owner " + std::to_string(owner));
      }
    } catch (...) {
      // Never let a report take down the I/O thread.
    }
    finished();
  });
}

void run_force_release(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                       const std::string& name, BoolDone on_done) {
  core->post_start(
      std::move(on_done), [](auto& late) { late(detail::ClientCore::closed_error(), false); },
      [core, kind, name](auto done) mutable {
        const std::string what = "force-unlocking " + kind->describe(*core, name);
        kind->force_step(
            core, name, [core, kind, name, what, done](std::exception_ptr error, net::Reply reply) {
              error = reply_error(error, reply, what);
              if (error) return done(error, false);
              if (reply.integer == 1) {
                core->watchdog().remove_all(name);
                for (const auto& key : kind->force_hold_keys(name)) {
                  // Every owner's hold of `key`: one range of the table, not a walk of it.
                  auto& holds = core->holds();
                  auto it = holds.lower_bound({key, std::numeric_limits<std::int64_t>::min()});
                  while (it != holds.end() && it->first.first == key) it = holds.erase(it);
                }
              }
              done(nullptr, reply.integer == 1);
            });
      });
}

}  // namespace redisync::detail
