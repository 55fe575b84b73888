// Direct handoff ("grant", Config::handoff = grant; docs/wire-format.md "Direct handoff").
//
// A waiting acquisition that is subscribed to the lock's grant channel registers, inside each
// failed attempt, in a redisync-only sorted set beside the lock. A release by a client in
// grant mode gives the freed lock to the registered waiter with the earliest deadline (an
// ordinary hold with the short Config::grant_lease) and names it on the grant channel. The
// waiter's client takes the message on the I/O thread and completes the waiting lock() at
// once, then extends the hold to its normal lease (a pipelined renewal; a hold found gone is
// reported lost).
//
// Races the registry settles (all on the I/O thread):
// - a grant and an attempt of the same waiter: the attempt finds the waiter's field and takes
//   it as the grant (reply -3) instead of counting a re-entry; the grant message that follows
//   is then expected and swallowed;
// - a grant and a give-up: the give-up step releases a grant it finds and passes it on; the
//   grant message is swallowed if it had not been seen yet;
// - a grant message for a field of this client that may be stale (one is expected and a new
//   acquisition of the same owner waits): the waiter attempts at once, and the attempt says.
//
// GrantRegistry and route_grant() have no I/O; the unit tests drive them directly.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
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
/// "redisync_grant__channel:TAG(N)": the prefix of the grant channels; the scripts that grant
/// get it and append the grantee's client id.
std::string grant_channel_prefix(const std::string& name);
/// "redisync_grant__channel:TAG(N):<client id>": where grants to the waiters of one Client are
/// announced ("<field>[ <token>]"). One channel per Client, not one per lock: a grant wakes
/// only the process it is for (a shared channel woke every waiting process, and on a busy CPU
/// the grantee then ran after the others: the handoff gained nothing over wake-and-retry).
std::string grant_channel(const std::string& name, const std::string& client_id);

/// What the registry does with a grant message naming a field of one of its entries.
enum class GrantRoute {
  take,     ///< the named acquisition waits: it has the lock
  verify,   ///< it waits, but a message for its field is expected from an earlier grant
            ///< that was taken or released already: it attempts at once to find out
  note,     ///< its give-up step is on its way: remember that the message came
  swallow,  ///< no acquisition waits for it; it was expected (taken or released already)
  ignore,   ///< someone else's (another client, or a field this client never registered)
};
GrantRoute route_grant(bool waiting, bool giving_up, int expected);

/// A grant message, "<field> <grant lease ms>[ <rest>]" (grant_pass_on.lua).
struct GrantMessage {
  std::string field;
  /// The releaser's grant lease: how long the granted hold lasts on the server unless
  /// extended. nullopt when the message does not say (then nothing is assumed of it).
  std::optional<Duration> grant_lease;
  std::string rest;  ///< what follows the lease (FencedLock: the token)
};
GrantMessage parse_grant_message(const std::string& payload);

/// An acquisition that can be granted the lock (AcquireLoop).
class GrantWaiter {
 public:
  virtual ~GrantWaiter() = default;
  /// `grant_lease`: the lease the grant was made with, as the message says (nullopt: unknown;
  /// for_other: the lease of the grant to someone else). `rest`: what the message carries
  /// after it (FencedLock: the token).
  virtual void grant_news(GrantNews news, std::optional<Duration> grant_lease,
                          const std::string& rest) = 0;
};

/// The grant-capable acquisitions of one Client, by (grant channel, owner field). I/O thread.
class GrantRegistry {
 public:
  /// The policy of a grant channel: routes its messages here.
  net::MessagePolicy policy();
  /// False when an acquisition of the same owner on the same lock is listed already (it
  /// then waits without registering for grants).
  /// `deregister`: the command that removes the acquisition's registration on the server
  /// (sent at Client close for the ones still listed, deregistrations()).
  bool add(const std::string& channel, const std::string& field, GrantWaiter* waiter,
           std::vector<std::string> deregister = {});
  /// The acquisition acquired (by a grant, or by an attempt: `took_grant` when that attempt
  /// took a grant whose message is still to come).
  void acquired(const std::string& channel, const std::string& field, bool took_grant);
  /// The acquisition gives up; its give-up step is on its way.
  void giving_up(const std::string& channel, const std::string& field);
  /// The give-up step answered (`released_grant`: it found and released a grant).
  void gave_up(const std::string& channel, const std::string& field, bool released_grant);
  void on_message(const std::string& channel, const std::string& payload);

  /// The commands that remove the registrations of the acquisitions listed now (Client
  /// close: a closed client's waiters are never granted the lock). From then on no attempt
  /// registers (GrantLink::registration_arg).
  std::vector<std::vector<std::string>> deregistrations();
  bool closing() const { return closing_; }

  std::size_t size() const { return entries_.size(); }
  int expected(const std::string& channel, const std::string& field) const;
  /// True while an acquisition of `field` is listed on `channel` and not giving up.
  bool waiting(const std::string& channel, const std::string& field) const;

 private:
  using Key = std::pair<std::string, std::string>;
  struct Entry {
    GrantWaiter* waiter = nullptr;
    bool giving_up = false;
    bool seen = false;  // a grant message came while giving up
    std::vector<std::string> deregister;
  };
  std::map<Key, Entry> entries_;
  std::map<Key, int> expected_;
  bool closing_ = false;
};

/// One acquisition's grant state, shared by its loop and its kind's attempt step.
struct GrantLink {
  std::string channel;
  std::string field;
  /// This Client's grant lease: how often a registration is refreshed. A grant made to this
  /// acquisition lasts the releaser's grant lease, which its message carries.
  Duration grant_lease{2000};
  GrantRegistry* registry = nullptr;
  std::shared_ptr<net::Channel> joined;  ///< the grant channel, joined by the loop
  bool listed = false;                   ///< in the registry
  bool took_grant = false;  ///< the attempt that acquired took a grant (reply -3)
  /// The command that removes this acquisition's registration (e.g. ZREM key field).
  std::vector<std::string> deregister;
  /// Runs with what a grant message carries after the field (FencedLock: reads the token).
  std::function<void(const std::string&)> on_grant;
  /// When the first attempt that registers was sent: a grant to this acquisition needs a
  /// registration, so it was made (and its grant lease started) no earlier than this, even
  /// when that attempt's reply is still on its way.
  std::optional<Clock::time_point> first_registration_sent;

  /// The registration argument of the next attempt (ms; "0": do not register).
  std::string registration_arg(std::optional<Clock::time_point> deadline);
  /// A failed attempt's wait bound, capped so the registration is refreshed in time.
  long long cap_wait(long long ttl_ms) const;
};

}  // namespace redisync::sync
