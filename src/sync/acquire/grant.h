// SPDX-License-Identifier: Apache-2.0
// Direct handoff ("grant", Config::handoff = grant; docs/wire-format.md "Direct handoff").
//
// A waiting acquisition that is subscribed to the lock's grant channel registers, inside each
// failed attempt, beside the lock, with its grant id (random, its own) and the attempt's
// number. A release by a client in grant mode gives the freed lock to the registered waiter
// that began to wait first (an ordinary hold with the releaser's short grant lease), marks
// the grant with the grantee's field and id, and names field, lease, id and attempt on the
// grantee's client's grant channel. The waiter's client takes the message on the I/O thread
// and completes the waiting lock() at once, then extends the hold to its normal lease (a hold
// found gone is reported lost).
//
// What keeps a grant from being mistaken for something else:
// - the server takes the caller's field found in the lock for a grant (reply -3), or a give-up
//   releases it, only when the grant mark names that acquisition's id: another acquisition of
//   the same owner, a late copy of an attempt or of a give-up, sees an ordinary hold;
// - the client takes a message only for the listed acquisition with the message's id; a
//   message for an earlier acquisition of the same owner is stale and ignored;
// - the message names the attempt whose registration the grant used: the grant was made after
//   that attempt was sent (its lease counts from then), and if a later attempt of the same
//   acquisition was answered "not acquired", the grant was gone by then (it ran out or was
//   given back): the message is stale, and the acquisition attempts instead.
//
// GrantRegistry, GrantLink and parse_grant_message() have no I/O; the unit tests drive them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "net/subscriber.h"
#include "sync/acquire/acquire_fsm.h"

namespace redisync::sync {

/// How long one registration lives when not refreshed (a waiter refreshes it with every
/// attempt, and attempts at least every third of the grant lease while registered).
inline constexpr Duration kGrantRegistration{10000};

/// "redisync_lock_grant:TAG(N)": the registrations (sorted set, member = owner field,
/// score = deadline in the server's epoch ms).
std::string grant_key(const std::string& name);
/// "redisync_lock_grant_id:TAG(N)": the registrations' ids (hash, owner field ->
/// "<grant id>:<attempt>").
std::string grant_id_key(const std::string& name);
/// "redisync_grant_mark:TAG(N)": the grant mark ("<field> <grant id>", for the grant lease),
/// for every kind.
std::string grant_mark_key(const std::string& name);
/// "redisync_grant__channel:TAG(N)": the prefix of the grant channels; the scripts that grant
/// get it and append the grantee's client id.
std::string grant_channel_prefix(const std::string& name);
/// "redisync_grant__channel:TAG(N):<client id>": where grants to the waiters of one Client are
/// announced (GrantMessage). One channel per Client, not one per lock: a grant wakes
/// only the process it is for (a shared channel woke every waiting process, and on a busy CPU
/// the grantee then ran after the others: the handoff gained nothing over wake-and-retry).
std::string grant_channel(const std::string& name, const std::string& client_id);

/// A grant message, "<field> <grant lease ms> <id> <attempt>[ <rest>]" (grant_pass_on.lua).
struct GrantMessage {
  std::string field;
  /// The releaser's grant lease: how long the granted hold lasts on the server unless
  /// extended. nullopt when the message does not say (then nothing is assumed of it).
  std::optional<Duration> grant_lease;
  std::string id;             ///< the grantee acquisition's grant id
  std::uint64_t attempt = 0;  ///< the attempt whose registration the grant used (0: unknown)
  std::string rest;           ///< what follows (FencedLock: the token)
  /// Not in the payload: when the message was published after, by this process's clock
  /// (its delivery's net::PublishedAfter; nullopt: unknown). A grant was made then too.
  net::PublishedAfter published_after;
  /// Every part a grant to us must have.
  bool complete() const { return grant_lease && !id.empty() && attempt > 0; }
};
GrantMessage parse_grant_message(const std::string& payload);

/// How long after `now` a granted hold's extension to its normal `lease` is sent: a third of
/// the grant lease after the grant's date `made_after` (a shorter section never needs it), or
/// at once (zero) when the normal lease is shorter than the grant lease (a holder killed in its
/// section must free the lock within its own lease) or when replies already come more than a
/// twentieth of the grant lease late (`reply_lag`, net::Executor::reply_lag: waiting would only
/// put the extension behind more of them, and a Client handed 100,000 grants at once lost
/// thousands of holds that way).
Duration grant_extension_delay(Clock::time_point now, Clock::time_point made_after,
                               Duration grant_lease, Duration lease, Duration reply_lag);

/// A fresh grant id: 16 lowercase hex digits from a random source.
std::string new_grant_id();

/// An acquisition that can be granted the lock (AcquireLoop).
class GrantWaiter {
 public:
  virtual ~GrantWaiter() = default;
  /// A grant to this acquisition (`message.id` is its own, the message is complete) or, with
  /// for_other, a grant to someone else on its channel.
  virtual void grant_news(GrantNews news, const GrantMessage& message) = 0;
};

struct GrantLink;

/// The grant-capable acquisitions of one Client, by (grant channel, owner field). I/O thread.
class GrantRegistry {
 public:
  /// The policy of a grant channel: routes its messages here.
  net::MessagePolicy policy();
  /// Lists the acquisition `waiter` of `link` (its grant channel, owner field, grant id and
  /// deregistration). False when an acquisition of the same owner on the same lock is listed
  /// already (it then waits without registering for grants). The registry holds the link
  /// until remove() and reads what it needs from it: a waiter's strings are never copied.
  bool add(std::shared_ptr<const GrantLink> link, GrantWaiter* waiter);
  /// The acquisition acquired, or its give-up step answered: it is no longer listed.
  void remove(const GrantLink& link);
  /// The acquisition gives up; its give-up step is on its way (which releases a grant made to
  /// it: a message for it is ignored meanwhile).
  void giving_up(const GrantLink& link);
  void on_message(const std::string& channel, const std::string& payload,
                  net::PublishedAfter published_after = std::nullopt);

  /// The commands that remove the registrations of the acquisitions listed now (their links'
  /// `deregister`; Client close: a closed client's waiters are never granted the lock). From
  /// then on no attempt registers (GrantLink::next_attempt).
  std::vector<std::vector<std::string>> deregistrations();
  bool closing() const { return closing_; }

  std::size_t size() const { return entries_.size(); }
  /// True while an acquisition of `field` is listed on `channel` and not giving up.
  bool waiting(std::string_view channel, std::string_view field) const;

 private:
  using Key = std::pair<std::string_view, std::string_view>;  // into the entry's link
  struct Entry {
    std::shared_ptr<const GrantLink> link;
    GrantWaiter* waiter = nullptr;
    bool giving_up = false;
  };
  std::map<Key, Entry> entries_;
  bool closing_ = false;
};

/// One acquisition's grant state, shared by its loop and its kind's attempt step.
struct GrantLink {
  std::string channel;
  std::string field;
  std::string id = new_grant_id();  ///< this acquisition's grant id
  /// This Client's grant lease. A grant made to this acquisition lasts the releaser's grant
  /// lease, which its message carries; this one is assumed only where a message does not say.
  Duration grant_lease{2000};
  GrantRegistry* registry = nullptr;
  std::shared_ptr<net::Channel> joined;  ///< the grant channel, joined by the loop
  bool listed = false;                   ///< in the registry
  /// The command that removes this acquisition's registration (e.g. ZREM key field), sent at
  /// Client close while the acquisition is listed (GrantRegistry::deregistrations).
  std::vector<std::string> deregister;
  /// Runs with what a grant message carries after its attempt number (FencedLock: the token).
  std::function<void(const std::string&)> on_grant;

  /// The grant arguments of the next attempt, numbered: the id (always this acquisition's;
  /// not listed, it registers nowhere and so takes no grant, but waits for a grant to the
  /// listed acquisition of its owner instead of re-entering it), the registration period in
  /// ms ("0": do not register, e.g. not listed or not subscribed to the grant channel yet)
  /// and the attempt's number.
  struct AttemptArgs {
    std::string id;
    std::string period;
    std::string attempt;
  };
  AttemptArgs next_attempt(std::optional<Clock::time_point> deadline);
  /// next_attempt() once it knows whether the attempt registers (`period`, nullopt: not) and
  /// when it is sent (`now`). For the unit tests.
  AttemptArgs number_attempt(std::optional<Duration> period, Clock::time_point now);
  /// The last attempt sent was answered "not acquired" (its kind's reply parser says so).
  void refused();
  /// When attempt `n` was sent, if it is one that may have registered for the grant a message
  /// names: nullopt when `n` is unknown, or stale (a later attempt was refused: the grant was
  /// gone when it ran). A grant made for attempt n's registration was made after that send.
  std::optional<Clock::time_point> grant_made_after(std::uint64_t n) const;
  /// When the grant `message` announces is known to have been made after: the later of its
  /// registering attempt's send (above) and its publication (GrantMessage::published_after,
  /// fresh within a heartbeat however old the registration). nullopt as above.
  std::optional<Clock::time_point> grant_made_after(const GrantMessage& message) const;
  /// A failed attempt's wait bound, capped so that the registration is refreshed before it
  /// lapses (a third of kGrantRegistration).
  long long cap_wait(long long ttl_ms) const;

 private:
  std::uint64_t sent_ = 0;            // attempts numbered so far
  std::uint64_t refused_through_ = 0;  // the latest attempt answered "not acquired"
  std::map<std::uint64_t, Clock::time_point> registered_;  // attempt -> send time (registering)
};

}  // namespace redisync::sync
