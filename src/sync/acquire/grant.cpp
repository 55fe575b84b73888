// SPDX-License-Identifier: Apache-2.0
#include "sync/acquire/grant.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <random>
#include <vector>

#include "sync/identity.h"

namespace redisync::sync {

std::string grant_key(const std::string& name) { return "redisync_lock_grant:" + hash_tag(name); }

std::string grant_id_key(const std::string& name) {
  return "redisync_lock_grant_id:" + hash_tag(name);
}

std::string grant_mark_key(const std::string& name) {
  return "redisync_grant_mark:" + hash_tag(name);
}

std::string grant_channel_prefix(const std::string& name) {
  return "redisync_grant__channel:" + hash_tag(name);
}

std::string grant_channel(const std::string& name, const std::string& client_id) {
  return grant_channel_prefix(name) + ":" + client_id;
}

std::string new_grant_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::uint64_t v = rng();
  std::string id(16, '0');
  for (auto& c : id) {
    c = kHex[v & 0xf];
    v >>= 4;
  }
  return id;
}

namespace {

// A whole decimal number in `text` within [lo, hi], else nullopt.
std::optional<long long> number_in(const std::string& text, long long lo, long long hi) {
  long long v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) {
    return std::nullopt;
  }
  return v;
}

// The next space-separated word of `payload` from `at` (moved past it and one space).
std::string next_word(const std::string& payload, std::size_t& at) {
  if (at == std::string::npos || at > payload.size()) return {};
  const auto space = payload.find(' ', at);
  std::string word = payload.substr(at, space == std::string::npos ? std::string::npos : space - at);
  at = space == std::string::npos ? std::string::npos : space + 1;
  return word;
}

}  // namespace

GrantMessage parse_grant_message(const std::string& payload) {
  GrantMessage m;
  std::size_t at = 0;
  m.field = next_word(payload, at);
  // Config::grant_lease is 100 ms..60 s; anything else is not a lease a release of ours made.
  if (auto lease = number_in(next_word(payload, at), 1, 3'600'000)) m.grant_lease = Duration{*lease};
  const std::string id = next_word(payload, at);
  if (!id.empty() && std::all_of(id.begin(), id.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      })) {
    m.id = id;
  }
  if (auto n = number_in(next_word(payload, at), 1, std::numeric_limits<long long>::max())) {
    m.attempt = static_cast<std::uint64_t>(*n);
  }
  if (at != std::string::npos) m.rest = payload.substr(at);
  return m;
}

net::MessagePolicy GrantRegistry::policy() {
  return [this](net::Channel& channel, const std::string& payload,
                net::PublishedAfter published_after) {
    on_message(channel.name(), payload, published_after);
  };
}

bool GrantRegistry::add(std::shared_ptr<const GrantLink> link, GrantWaiter* waiter) {
  const Key key{link->channel, link->field};
  return entries_.try_emplace(key, Entry{std::move(link), waiter}).second;
}

std::vector<std::vector<std::string>> GrantRegistry::deregistrations() {
  closing_ = true;
  std::vector<std::vector<std::string>> out;
  for (const auto& [key, entry] : entries_) {
    if (!entry.link->deregister.empty()) out.push_back(entry.link->deregister);
  }
  return out;
}

void GrantRegistry::remove(const GrantLink& link) { entries_.erase(Key{link.channel, link.field}); }

void GrantRegistry::giving_up(const GrantLink& link) {
  auto it = entries_.find(Key{link.channel, link.field});
  if (it == entries_.end()) return;
  it->second.giving_up = true;
  it->second.waiter = nullptr;
}

bool GrantRegistry::waiting(std::string_view channel, std::string_view field) const {
  auto it = entries_.find(Key{channel, field});
  return it != entries_.end() && !it->second.giving_up;
}

void GrantRegistry::on_message(const std::string& channel, const std::string& payload,
                               net::PublishedAfter published_after) {
  GrantMessage message = parse_grant_message(payload);
  message.published_after = published_after;
  // Collected first: a waiter told something may leave the registry. The grantee is the
  // listed acquisition of the message's field with the message's id; a message for another
  // acquisition of the same owner (an earlier one: stale) concerns it as it does the others,
  // a grant to someone else; one giving up hears nothing (its give-up step settles a grant).
  // The others' links are held meanwhile: the keys point into them.
  GrantWaiter* grantee = nullptr;
  std::vector<std::shared_ptr<const GrantLink>> others;
  for (auto o = entries_.lower_bound(Key{channel, std::string_view()});
       o != entries_.end() && o->first.first == channel; ++o) {
    if (o->second.giving_up || !o->second.waiter) continue;
    if (o->first.second == message.field && o->second.link->id == message.id &&
        !message.id.empty()) {
      grantee = o->second.waiter;
    } else {
      others.push_back(o->second.link);
    }
  }
  if (grantee) {
    // A grant that does not say its lease or attempt is checked by an attempt, which takes
    // it (reply -3) when the mark names this acquisition.
    grantee->grant_news(message.complete() ? GrantNews::for_me : GrantNews::maybe_stale, message);
  }
  for (const auto& link : others) {
    auto o = entries_.find(Key{link->channel, link->field});
    if (o != entries_.end() && o->second.link == link && o->second.waiter && !o->second.giving_up) {
      o->second.waiter->grant_news(GrantNews::for_other, message);
    }
  }
}

GrantLink::AttemptArgs GrantLink::next_attempt(std::optional<Clock::time_point> deadline) {
  const auto now = Clock::now();
  if (!listed || !joined || !joined->subscribed() || (registry && registry->closing())) {
    return number_attempt(std::nullopt, now);
  }
  Duration period = kGrantRegistration;
  if (deadline) {
    period = std::min(period, std::chrono::ceil<Duration>(*deadline - now));
  }
  return number_attempt(std::max(period, Duration{1}), now);
}

GrantLink::AttemptArgs GrantLink::number_attempt(std::optional<Duration> period,
                                                 Clock::time_point now) {
  AttemptArgs args;
  // Unlisted (another acquisition of the owner is), it still sends its own id: it takes no
  // grant and registers nowhere with it, but waits for a grant to that other acquisition
  // instead of re-entering it (grant_pending_for_another in grant_pass_on.lua).
  args.id = id;
  const auto n = ++sent_;
  args.attempt = std::to_string(n);
  args.period = "0";
  if (period && listed) {
    args.period = std::to_string(period->count());
    registered_[n] = now;
  }
  return args;
}

void GrantLink::refused() {
  refused_through_ = std::max(refused_through_, sent_);
  // A grant for an earlier attempt's registration is stale now: their times are not needed.
  registered_.erase(registered_.begin(), registered_.lower_bound(refused_through_));
}

std::optional<Clock::time_point> GrantLink::grant_made_after(std::uint64_t n) const {
  if (n < refused_through_) return std::nullopt;
  auto it = registered_.find(n);
  if (it == registered_.end()) return std::nullopt;
  return it->second;
}

std::optional<Clock::time_point> GrantLink::grant_made_after(const GrantMessage& message) const {
  auto registered = grant_made_after(message.attempt);
  if (!registered || !message.published_after) return registered;
  return std::max(*registered, *message.published_after);
}

Duration grant_extension_delay(Clock::time_point now, Clock::time_point made_after,
                               Duration grant_lease, Duration lease, Duration reply_lag) {
  const auto due = made_after + grant_lease / 3;
  if (lease < grant_lease || due <= now || reply_lag > grant_lease / 20) return Duration{0};
  return std::chrono::ceil<Duration>(due - now);
}

long long GrantLink::cap_wait(long long ttl_ms) const {
  if (!listed) return ttl_ms;
  // Refreshed every third of the registration period, so that releases never pass over a
  // live waiter. How fresh a grant is known to be comes from the pub/sub heartbeat
  // (GrantMessage::published_after), not from the registration: a waiter need not re-attempt
  // every third of the grant lease for its grant to be taken at once (issue 34: 100,000
  // waiters made 74,000 script calls a second that way).
  const long long refresh = kGrantRegistration.count() / 3;
  return ttl_ms < 0 ? refresh : std::min(ttl_ms, refresh);
}

}  // namespace redisync::sync
