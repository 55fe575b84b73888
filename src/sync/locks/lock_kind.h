// SPDX-License-Identifier: Apache-2.0
// What distinguishes one lock kind from another (its atomic steps, its waiting strategy, how
// its release reply reads), and the flows every kind shares: acquire -> hold bookkeeping ->
// watchdog registration, release -> outcome, force release, queries.
//
// A kind describes; the flows do the bookkeeping (lock_kind.cpp: the acquire side;
// release_flow.cpp: the release side; grant_steps.cpp: the direct handoff), so each kind's
// file only says which script runs with which keys.
//
// Threading: the step functions and the flows' callbacks run on the I/O thread.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "net/executor.h"
#include "net/subscriber.h"
#include "redisync/lock.h"
#include "sync/acquire/acquire_loop.h"
#include "sync/client_core.h"
#include "sync/hold/watchdog.h"

namespace redisync::detail {

using AcquireDone = std::function<void(std::exception_ptr, bool acquired)>;
/// A waiting loop's completion: the outcome carries what the hold's local deadline is derived
/// from (sync/acquire/acquire_outcome.h).
using LoopDone = sync::AcquireLoop::Done;
using ReleaseDone = std::function<void(ReleaseOutcome, std::exception_ptr)>;
using BoolDone = std::function<void(std::exception_ptr, bool)>;

/// How a kind's release step answers (every kind: nil = the caller holds nothing).
enum class ReleaseReply {
  own_count,      ///< 0 = the caller still holds it (reentrant), 1 = the caller's last hold
                  ///< was released (lock, fenced, spin, write lock)
  own_or_absent,  ///< as own_count, and 2 answers a release of a lock that no longer
                  ///< existed (fair lock §4.6: it wakes the next waiter all the same)
  whole_lock,     ///< 0/1 say whether the lock as a whole is still held, not whether the
                  ///< caller is (read lock §5.3): the caller's own count is kept locally
};

/// Who holds what, as the bookkeeping sees one (kind, name, owner).
struct HoldRef {
  std::string hold_key;  ///< key in ClientCore::holds(); the name a LockLostEvent carries
  std::int64_t owner = 0;
  std::string field;         ///< the owner's field in the hash (O, or W for a writer)
  sync::RenewalKey renewal;  ///< the watchdog registration
  sync::RenewalKey report;   ///< what the watchdog reports when it finds the hold lost
  /// Set when releasing to undo an acquire no replica acknowledged: the replicas are known
  /// to lag, so the release is not waited for (acked_release) — it only has to reach the master.
  bool undo = false;
};

/// One acquisition as run_acquire hands it to its kind's waiting loop: everything the loop
/// needs besides the kind, name and owner, in the call (nothing rides on ClientCore).
struct LoopStart {
  Duration lease{0};  ///< the effective lease (the watchdog's when the caller gave none)
  Duration wait{-1};  ///< as the caller gave it (< 0: no limit, 0: one attempt)
  std::optional<sync::Clock::time_point> deadline;  ///< from `wait`; nullopt: no limit
  std::shared_ptr<sync::AcquireProbe> probe;  ///< counts attempts and wake-ups, or null
  std::shared_ptr<CancelSignal> cancel;  ///< an async acquisition's cancellation, or null
  LoopDone done;  ///< the completion, with the acquisition's outcome
};

/// Starts the waiting loop of one acquisition (pub/sub AcquireLoop, spin loop...).
using LoopStarter = std::function<void(LoopStart start)>;

class LockKind : public std::enable_shared_from_this<LockKind> {
 public:
  virtual ~LockKind() = default;

  /// "fair lock", "spin lock"... for messages.
  virtual std::string noun() const = 0;
  /// Appended to the lock name for the hold bookkeeping and LockLostEvent::name
  /// (" (read lock)"); empty for kinds whose hash is the lock itself.
  virtual std::string hold_suffix() const { return {}; }
  /// The key of `name`'s holds in ClientCore::holds(): name + hold_suffix().
  std::string hold_key(const std::string& name) const { return name + hold_suffix(); }
  /// Appended to "<client id>:<owner>" to make the hash field (":write").
  virtual std::string field_suffix() const { return {}; }
  virtual sync::RenewalKind renewal_kind() const { return sync::RenewalKind::hash_field; }
  virtual ReleaseReply release_reply() const { return ReleaseReply::own_count; }
  /// Every hold key a successful force release ends (a read-write lock: both sides).
  virtual std::vector<std::string> force_hold_keys(const std::string& name) const {
    return {hold_key(name)};
  }

  /// Starts the waiting loop of one acquisition of `name` by `owner` (I/O thread): the kind
  /// picks its step and its way of waiting.
  virtual void start_loop(const std::shared_ptr<ClientCore>& core, const std::string& name,
                          std::int64_t owner, LoopStart start) const = 0;
  /// Runs the release step of `field` with release record key `record` (§1.8); `lease` is
  /// the lease of the remaining holds.
  virtual void release_step(const std::shared_ptr<ClientCore>& core, const std::string& name,
                            const HoldRef& hold, Duration lease, const std::string& record,
                            net::ReplyHandler handler) const = 0;
  /// Runs the force release step; the reply is 1 when something was released.
  virtual void force_step(const std::shared_ptr<ClientCore>& core, const std::string& name,
                          net::ReplyHandler handler) const = 0;
  /// Answers "is it locked" (default: EXISTS name).
  virtual void is_locked(const std::shared_ptr<ClientCore>& core, const std::string& name,
                         BoolDone done) const;

  HoldRef hold_ref(const ClientCore& core, const std::string& name, std::int64_t owner) const;
  /// "<noun> '<name>' on <server>", for messages.
  std::string describe(const ClientCore& core, const std::string& name) const;
};

/// A kind on the reentrant hash N of docs/wire-format.md §2.1 whose releases announce
/// themselves (Lock, FencedLock, the non-reentrant lock): §2.3's release and §2.4's force
/// release, each publishing on the lock channel; in grant mode the release grants the lock to
/// a registered waiter instead (§18, grant_release_step). Such a kind only says how it acquires.
class HashLockKind : public LockKind {
 public:
  void release_step(const std::shared_ptr<ClientCore>& core, const std::string& name,
                    const HoldRef& hold, Duration lease, const std::string& record,
                    net::ReplyHandler handler) const override;
  void force_step(const std::shared_ptr<ClientCore>& core, const std::string& name,
                  net::ReplyHandler handler) const override;
};

using KindPtr = std::shared_ptr<const LockKind>;

/// The one instance of a kind without state of its own, shared by every lock handle of that
/// kind (a handle per lock, 100,000 locks: one allocation each saved).
template <class Kind>
KindPtr shared_kind() {
  static const KindPtr kind = std::make_shared<const Kind>();
  return kind;
}

// --- The flows every kind shares ---

/// Acquires on the I/O thread: picks the lease (watchdog when lease <= 0), runs the kind's
/// loop via `start` (default: kind->start_loop), and on success counts the hold and registers
/// it with the watchdog. wait < 0: no limit; wait == 0: one attempt. `cancel` (async calls
/// whose handler has a cancellation slot): a requested cancellation makes the waiting loop
/// give up (CancelledError).
void run_acquire(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                 const std::string& name, std::int64_t owner, Duration lease, Duration wait,
                 AcquireDone done, LoopStarter start = nullptr,
                 std::shared_ptr<CancelSignal> cancel = nullptr);
/// The lease a partial release passes (what the holds left after it need): the watchdog lease
/// while one of them is a watchdog hold, else the longest time left of their fixed leases.
/// The scripts never shorten the key's expiry below it (nor below what it has).
Duration remaining_lease(const Hold& hold, Duration watchdog_lease);
/// Releases one hold of `owner` on the I/O thread and reports the outcome.
void run_release(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                 const std::string& name, std::int64_t owner, ReleaseDone done);
/// run_release without the post: already on the I/O thread.
void release_now(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                 const std::string& name, std::int64_t owner, ReleaseDone done);
/// The release behind unlock(), which never throws (std guards call it from a noexcept
/// destructor). On the I/O thread: releases one hold of `owner` (release_now) and settles what
/// the release did not do:
/// - lost: the lost-lock handler is told, unless the watchdog already told it;
/// - failed (server unreachable): one local hold is dropped and, with the last one, its
///   renewals stop, so the lock frees when its lease ends; a line (Config::log, else stderr)
///   says so;
/// - not_held: a line (Config::log, else stderr).
/// Then `finished` runs.
void quiet_unlock(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                  const std::string& name, std::int64_t owner, std::function<void()> finished);
/// The line (Config::log, else stderr) for an unlock() that did not succeed, or could not even
/// start (client closed...). Never throws.
void log_quiet_unlock(const ClientCore& core, const std::string& what,
                      const std::string& why) noexcept;
/// Force release on the I/O thread; on success forgets every local hold it ended.
void run_force_release(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                       const std::string& name, BoolDone done);

/// Interprets a release reply (nil / 0 / 1), updates the holds and the watchdog. I/O thread.
ReleaseOutcome settle_release(ClientCore& core, const HoldRef& hold, const net::Reply& reply,
                              ReleaseReply kind);
/// After a partial release: when none of `hold`'s remaining holds is a watchdog hold, stops
/// its renewals and gives it the local deadline of the remaining fixed lease that ends last,
/// so the key ends with it. I/O thread.
void keep_renewal_for_remaining(ClientCore& core, const HoldRef& ref, Hold& hold);
/// The InvalidArgument of sync::check_lease for `lease` (lease for <what>), or nullptr.
std::exception_ptr too_long_lease(Duration lease, const std::string& what);
/// NotOwnerError / LockLostError for those outcomes, else nullptr.
std::exception_ptr outcome_error(ReleaseOutcome outcome, const std::string& what,
                                 std::int64_t owner);
/// The error of a failed request: `error` itself, a ServerError for an error reply naming
/// `what`, or nullptr.
std::exception_ptr reply_error(std::exception_ptr error, const net::Reply& reply,
                               const std::string& what);

/// True when this process knows the hold (hold_key, owner) is lost (the watchdog or its local
/// lease deadline reported it) and it has not been released since. Any thread: on the I/O
/// thread it reads the table in place, elsewhere it waits for the I/O thread to read it.
bool known_lost(const std::shared_ptr<ClientCore>& core, const std::string& hold_key,
                std::int64_t owner);
/// The lineage of the hold (hold_key, owner) now (Hold::lineage); 0 when there is none, or it
/// is known lost. Any thread, as known_lost.
std::uint64_t hold_lineage(const std::shared_ptr<ClientCore>& core, const std::string& hold_key,
                           std::int64_t owner);

/// Runs one command from a user thread and returns its reply (error replies thrown as
/// ServerError naming `what`). Blocks; not on the I/O thread.
net::Reply query(const std::shared_ptr<ClientCore>& core, std::vector<std::string> args,
                 const std::string& what);

/// Lock channel messages (docs/wire-format.md §13): "0" wakes one local waiter, anything else all
/// of them.
void lock_message_policy(net::Channel& channel, const std::string& payload, net::PublishedAfter);

/// `body` with the publish guard in front (lua::with_publish_guard): it refuses, before any
/// write, a user who may not publish what the kind's release will. In grant mode that includes
/// the grant channel of the lock `name` (a grant-mode release publishes there when a waiter is
/// registered; issue 36 item 5). Pair it with publish_guarded_args.
const lua::Script& publish_guarded(const ClientCore& core, const lua::Script& body);
/// `args` followed by what publish_guarded's guard reads: the publish command and `channel`
/// (the channel the kind's release publishes on; issue 17 item 4), and in grant mode this
/// Client's grant channel of the lock `name` before them.
std::vector<std::string> publish_guarded_args(const ClientCore& core,
                                              std::vector<std::string> args,
                                              const std::string& channel,
                                              const std::string& name);
/// The §2.2 reading: nil = acquired, integer = the holder's PTTL.
sync::AttemptResult parse_nil_or_ttl(const net::Reply& reply);
/// What a record's parse() throws for a reply of a shape its script never gives (a misbehaving
/// server or proxy): send_attempt turns it into a ServerError naming the lock and server.
std::runtime_error unexpected_reply(const net::Reply& reply);
/// True for an array of exactly two integers (the fenced lock's {code, token} replies).
inline bool two_integers(const net::Reply& reply) {
  return reply.is_array() && reply.elements.size() == 2 && reply.elements[0].is_integer() &&
         reply.elements[1].is_integer();
}

/// What one acquisition's attempt step sends and how its reply reads. Made once per
/// acquisition (a kind's acquisition record, HoldCountSteps) and shared by all its attempts:
/// an attempt copies only the keys and arguments its request takes.
class AttemptRequest {
 public:
  virtual ~AttemptRequest() = default;
  virtual ClientCore& client() const = 0;
  virtual const lua::Script& script() const = 0;
  virtual std::vector<std::string> keys() const = 0;
  /// Built per attempt (the starvation guard's claim, the fair lock's time).
  virtual std::vector<std::string> args() = 0;
  /// Reads a reply; throws (unexpected_reply) for a shape its script never gives.
  virtual sync::AttemptResult parse(const net::Reply& reply) = 0;
  /// Whether the step is followed by WAIT and undone when no replica acknowledged it.
  virtual bool undoable() const { return false; }
  /// Drops the one hold an unacknowledged attempt just added, then calls `then`.
  virtual void undo(std::function<void()> then) { then(); }
  /// "<noun> '<name>' on <server>", named by the attempt's errors.
  virtual std::string what() const = 0;
};

/// Sends one attempt of `request` and reports its outcome to `done`. Error replies and parser
/// exceptions become the attempt's error ("acquiring <what>"). An undoable request is followed
/// by WAIT when the master has replicas; an acquisition no replica acknowledged is undone and
/// reported as a (retryable) TimeoutError, and the step is never resent by the executor: the
/// loop retries, after a recheck. An acquisition it reports carries its send time
/// (AttemptResult::sent).
void send_attempt(const std::shared_ptr<AttemptRequest>& request, sync::AcquireSteps::Done done);

/// Undoes one acquisition of `name` by `owner` with lease `lease` (the kind's own release step,
/// with a fresh release record), then calls `then`.
void undo_acquire(const std::shared_ptr<ClientCore>& core, const LockKind& kind,
                  const std::string& name, std::int64_t owner, Duration lease,
                  std::function<void()> then);
/// After an attempt that may have run on the server, whether it acquired (the recheck and
/// settle step of the kinds that count holds in the hash `name` under the owner's field,
/// HoldCountSteps), reported to `cb`: {acquired} when the owner's count on the server is one
/// more than the local count (only this owner changes its own field); an error when the server
/// cannot be asked. In grant mode it reads the grant mark and the lock's PTTL in the same step
/// (hold_grant_check.lua): a hold the mark names for the owner is a grant not taken yet,
/// reported as such (AttemptResult::grant, sync/acquire/hold_check.h), and the acquisition
/// completes as a grant; a hold the mark names for another acquisition of the owner that is
/// waiting for it (another grant id than `own_grant`'s, this acquisition's link, or nullptr)
/// is not this one's. `on_acquired`
/// (optional) runs before an acquisition found is reported (FencedLock: reads the token), and
/// reports through its callback.
void check_hold_count(const std::shared_ptr<ClientCore>& core, const LockKind& kind,
                      const std::string& name, std::int64_t owner, const sync::GrantLink* own_grant,
                      const std::function<void(sync::AcquireLoop::AttemptDone)>& on_acquired,
                      sync::AcquireLoop::AttemptDone cb);
/// The pub/sub waiting loop of docs/wire-format.md §13 for the acquisition `start` (its
/// deadline, probe, cancellation, completion) with `steps` (their channel, attempt, recheck,
/// settle, give-up). When `steps` can recheck, errors that may have run on the server
/// (timeouts, dropped connections, unacknowledged acquires) are retried
/// Config::retry_attempts times within the wait; otherwise they are reported. With a settle
/// step the loop never gives up after such an error without finding out whether the attempt
/// ran (issue 22 item 1).
void start_pubsub_loop(const std::shared_ptr<ClientCore>& core, LoopStart start,
                       std::shared_ptr<sync::AcquireSteps> steps,
                       std::shared_ptr<sync::GrantLink> grant = nullptr);
/// The same loop in AcquireFsm's polling mode for a spin acquisition (SpinLock, wire §10): no
/// channel; between attempts it sleeps `backoff`'s next sleep. Errors, rechecks, settling and
/// cancellation as above.
void start_spin_loop(const std::shared_ptr<ClientCore>& core, LoopStart start,
                     std::shared_ptr<sync::AcquireSteps> steps, sync::BackoffSequence backoff);

// --- Direct handoff (Config::handoff = grant; sync/acquire/grant.h) ---

/// The grant link of one acquisition of `name` by `owner`, or nullptr when the client is in
/// wake mode or the owner holds the lock already (a re-entry never waits for a grant).
std::shared_ptr<sync::GrantLink> grant_link(const std::shared_ptr<ClientCore>& core,
                                            const LockKind& kind, const std::string& name,
                                            std::int64_t owner);
/// KEYS[1..4] of lock_grant_acquire.lua: N, its registrations, their ids, the grant mark.
std::vector<std::string> lock_grant_keys(const std::string& name);
/// ARGV[1..5] of a grant-mode acquire step (lock_grant_acquire.lua and rwlock_write_acquire.lua
/// put them in their own order): lease, owner field, and the link's next attempt (id,
/// registration period, attempt number), numbered now.
std::vector<std::string> grant_attempt_args(sync::GrantLink& link, std::string lease,
                                            std::string field,
                                            std::optional<sync::Clock::time_point> deadline);
/// The give-up of a grant-capable acquisition (lock_grant_give_up.lua): leaves the
/// registrations, releases and passes on a grant it finds, and answers the registry.
/// `token_key`: FencedLock's counter (a grant passed on issues a token), else empty.
std::function<void()> grant_give_up(const std::shared_ptr<ClientCore>& core,
                                    std::shared_ptr<sync::GrantLink> link,
                                    const std::string& name, const std::string& token_key);
/// The give-up step of any kind on lock_grant_give_up.lua: `keys` its KEYS, `extra_args` what
/// follows ARGV[3] (ReadWriteLock's write side: the write release message).
std::function<void()> grant_give_up_step(const std::shared_ptr<ClientCore>& core,
                                         std::shared_ptr<sync::GrantLink> link,
                                         std::vector<std::string> keys,
                                         std::vector<std::string> extra_args);
/// The release of Lock and FencedLock in grant mode (lock_grant_release.lua).
void grant_release_step(const std::shared_ptr<ClientCore>& core, const std::string& name,
                        const HoldRef& hold, Duration lease, const std::string& record,
                        const std::string& token_key, net::ReplyHandler handler);
/// The acquire reply of lock_grant_acquire.lua without token: nil acquired, -3 took a grant
/// (noted in `link`), else the PTTL (capped by the link's registration refresh).
sync::AttemptResult read_grant_reply(sync::GrantLink& link, const net::Reply& reply);
/// A granted hold starts on the releaser's short grant lease (`granted.lease`): sets its
/// normal lease (`lease`; the watchdog's when `watchdog`) and ends the grant mark of the lock
/// `name` a third of the grant lease after `registered` (no later than the grant was made), or
/// at once when that is past or when `lease` is the shorter. `grant_id` names the hold: a hold
/// released or lost meanwhile is left alone. I/O thread.
void extend_grant(const std::shared_ptr<ClientCore>& core, const HoldRef& ref,
                  const std::string& name, Duration lease, bool watchdog, std::uint64_t grant_id,
                  sync::Clock::time_point registered, const sync::GrantTaken& granted);

/// Runs a release step (idempotent: it carries its release record, docs/wire-format.md §1.8) followed by WAIT
/// when the master has replicas (docs/wire-format.md §1.7). A release no replica acknowledged is resent with
/// the same record (it answers what it did the first time) and waited for again, up to
/// Config::retry_attempts times; then `handler` gets the step's reply all the same (the master
/// has the release; only its copy on a replica is late).
/// With `hold.undo` set it is a plain call (see HoldRef::undo).
/// `record` is the step's release record (one of `keys`).
void acked_release(const std::shared_ptr<ClientCore>& core, const HoldRef& hold,
                   const lua::Script& script, std::vector<std::string> keys,
                   std::vector<std::string> args, const std::string& record,
                   net::ReplyHandler handler);

/// The reentrant-hash release of docs/wire-format.md §2.3 (lock_release.lua); `publish` false for the spin
/// lock (§10). Shared by kinds that use the hash N of §2.1.
void hash_release_step(const std::shared_ptr<ClientCore>& core, const std::string& name,
                       const HoldRef& hold, Duration lease, const std::string& record, bool publish,
                       net::ReplyHandler handler);
/// The force release of docs/wire-format.md §2.4 (lock_force_release.lua).
void hash_force_step(const std::shared_ptr<ClientCore>& core, const std::string& name, bool publish,
                     net::ReplyHandler handler);
/// A fresh release record key (docs/wire-format.md §1.8) for one release of `name`.
std::string release_record_key(const std::string& name);
/// The expiry (ms) a lock release script gives its release record (docs/wire-format.md §1.8):
/// at least 60 s and three watchdog leases, and never less than the retry budget
/// (ClientCore::release_record_ttl_ms). A record normally goes within milliseconds (swept once
/// the release is answered); this bounds only one whose release was sent more than once, which
/// must outlive any copy still on its way.
long long lock_release_record_ttl_ms(const ClientCore& core);
/// "redisson_lock__channel:TAG(N)".
std::string lock_channel(const std::string& name);

}  // namespace redisync::detail
