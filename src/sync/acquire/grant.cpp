#include "sync/acquire/grant.h"

#include <algorithm>
#include <charconv>
#include <vector>

#include "sync/identity.h"

namespace redisync::sync {

std::string grant_key(const std::string& name) { return "redisync_lock_grant:" + hash_tag(name); }

std::string grant_channel_prefix(const std::string& name) {
  return "redisync_grant__channel:" + hash_tag(name);
}

std::string grant_channel(const std::string& name, const std::string& client_id) {
  return grant_channel_prefix(name) + ":" + client_id;
}

GrantRoute route_grant(bool waiting, bool giving_up, int expected) {
  if (giving_up) return GrantRoute::note;
  if (waiting) return expected > 0 ? GrantRoute::verify : GrantRoute::take;
  return expected > 0 ? GrantRoute::swallow : GrantRoute::ignore;
}

net::MessagePolicy GrantRegistry::policy() {
  return [this](net::Channel& channel, const std::string& payload) {
    on_message(channel.name(), payload);
  };
}

bool GrantRegistry::add(const std::string& channel, const std::string& field,
                        GrantWaiter* waiter, std::vector<std::string> deregister) {
  Entry entry;
  entry.waiter = waiter;
  entry.deregister = std::move(deregister);
  return entries_.emplace(Key{channel, field}, std::move(entry)).second;
}

std::vector<std::vector<std::string>> GrantRegistry::deregistrations() {
  closing_ = true;
  std::vector<std::vector<std::string>> out;
  for (const auto& [key, entry] : entries_) {
    if (!entry.deregister.empty()) out.push_back(entry.deregister);
  }
  return out;
}

void GrantRegistry::acquired(const std::string& channel, const std::string& field,
                             bool took_grant) {
  entries_.erase(Key{channel, field});
  if (took_grant) ++expected_[Key{channel, field}];
}

void GrantRegistry::giving_up(const std::string& channel, const std::string& field) {
  auto it = entries_.find(Key{channel, field});
  if (it == entries_.end()) return;
  it->second.giving_up = true;
  it->second.waiter = nullptr;
}

void GrantRegistry::gave_up(const std::string& channel, const std::string& field,
                            bool released_grant) {
  auto it = entries_.find(Key{channel, field});
  if (it == entries_.end()) return;
  const bool seen = it->second.seen;
  entries_.erase(it);
  // The give-up released a grant whose message has not come yet: it will, and it is stale.
  if (released_grant && !seen) ++expected_[Key{channel, field}];
}

int GrantRegistry::expected(const std::string& channel, const std::string& field) const {
  auto it = expected_.find(Key{channel, field});
  return it == expected_.end() ? 0 : it->second;
}

bool GrantRegistry::waiting(const std::string& channel, const std::string& field) const {
  auto it = entries_.find(Key{channel, field});
  return it != entries_.end() && !it->second.giving_up;
}

GrantMessage parse_grant_message(const std::string& payload) {
  GrantMessage m;
  const auto space = payload.find(' ');
  m.field = payload.substr(0, space);
  if (space == std::string::npos) return m;
  const auto lease_end = payload.find(' ', space + 1);
  const std::string lease = payload.substr(space + 1, lease_end - space - 1);
  long long ms = 0;
  const auto [end, ec] = std::from_chars(lease.data(), lease.data() + lease.size(), ms);
  // Config::grant_lease is 100 ms..60 s; anything else is not a lease this code made.
  if (ec == std::errc() && end == lease.data() + lease.size() && ms >= 1 && ms <= 3'600'000) {
    m.grant_lease = Duration{ms};
  }
  if (lease_end != std::string::npos) m.rest = payload.substr(lease_end + 1);
  return m;
}

void GrantRegistry::on_message(const std::string& channel, const std::string& payload) {
  const GrantMessage message = parse_grant_message(payload);
  const std::string& field = message.field;
  const std::string& rest = message.rest;
  const Key key{channel, field};
  auto it = entries_.find(key);
  const bool listed = it != entries_.end();
  auto exp = expected_.find(key);
  const int expected = exp == expected_.end() ? 0 : exp->second;
  const auto route = route_grant(listed && !it->second.giving_up,
                                 listed && it->second.giving_up, expected);
  auto consume_expected = [&] {
    if (--exp->second <= 0) expected_.erase(exp);
  };
  // The other waiters on this channel hear that the lock went to someone else. Collected
  // first: a waiter told something may leave the registry.
  std::vector<Key> others;
  for (auto o = entries_.lower_bound(Key{channel, std::string()});
       o != entries_.end() && o->first.first == channel; ++o) {
    if (o->first.second != field && !o->second.giving_up) others.push_back(o->first);
  }
  switch (route) {
    case GrantRoute::take:
      // A grant whose lease the message does not tell is checked by an attempt, which takes
      // it with the acquisition's own lease (reply -3).
      it->second.waiter->grant_news(
          message.grant_lease ? GrantNews::for_me : GrantNews::maybe_stale, message.grant_lease,
          rest);
      break;
    case GrantRoute::verify:
      consume_expected();
      it->second.waiter->grant_news(GrantNews::maybe_stale, message.grant_lease, rest);
      break;
    case GrantRoute::note:
      it->second.seen = true;
      break;
    case GrantRoute::swallow:
      consume_expected();
      break;
    case GrantRoute::ignore:
      break;
  }
  for (const auto& k : others) {
    auto o = entries_.find(k);
    if (o != entries_.end() && o->second.waiter && !o->second.giving_up) {
      o->second.waiter->grant_news(GrantNews::for_other, message.grant_lease, std::string());
    }
  }
}

std::string GrantLink::registration_arg(std::optional<Clock::time_point> deadline) {
  if (!listed || !joined || !joined->subscribed() || (registry && registry->closing())) {
    return "0";
  }
  const auto now = Clock::now();
  Duration period = kGrantRegistration;
  if (deadline) {
    period = std::min(period, std::chrono::ceil<Duration>(*deadline - now));
  }
  if (!first_registration_sent) first_registration_sent = now;
  return std::to_string(std::max<long long>(period.count(), 1));
}

long long GrantLink::cap_wait(long long ttl_ms) const {
  if (!listed) return ttl_ms;
  // Refreshed every third of the grant lease: a grant is then taken at once (the granted
  // hold's lease is known to last long enough, AcquireFsm::grant_heard).
  const long long refresh = std::max<long long>(grant_lease.count() / 3, 1);
  return ttl_ms < 0 ? refresh : std::min(ttl_ms, refresh);
}

}  // namespace redisync::sync
