// SPDX-License-Identifier: Apache-2.0
// The lock-side steps of the direct handoff (docs/wire-format.md §18): the grant link of
// an acquisition, its give-up step, the grant-mode release and taking a grant.
#include "sync/locks/lock_kind.h"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <algorithm>
#include <charconv>
#include <iostream>
#include <optional>
#include <utility>

#include "lua/scripts.h"
#include "net/server_text.h"
#include "sync/durations.h"
#include "sync/identity.h"
#include "sync/locks/non_reentrant.h"
#include "sync/metrics_report.h"


namespace redisync::detail {

namespace {

// Sends the extension of the granted hold `ref` (grant_extend.lua): sets `lease` (renewed by
// the watchdog from then on when `watchdog`) and ends the grant mark. It may shorten the
// server's expiry (a lease below what is left of the grant lease, a MultiLock's final lease):
// the local deadline becomes the earlier of its own and `lease` from the send before it goes
// out, and stays there when the reply is lost or fails (the extension may have run). Held:
// the local deadline counts `lease` from the send, unless a later lease-setting send
// (Hold::lease_updates, a MultiLock's lease set) followed: the later one decides. Gone (the
// grant lease ended first): the hold is lost. `done` (may be null) hears the outcome.
void send_grant_extension(const std::shared_ptr<ClientCore>& core, const HoldRef& ref,
                          const std::string& name, std::uint64_t grant_id,
                          const std::string& grant, Duration lease, bool watchdog,
                          Hold::GrantExtensionDone done) {
  auto held = core->holds().find({ref.hold_key, ref.owner});
  const auto sent = sync::Clock::now();
  if (held == core->holds().end() || held->second.lost || held->second.grant_id != grant_id) {
    if (done) done(false, sent);
    return;  // released (or lost) already
  }
  core->watchdog().cap(ref.renewal, lease, sent);
  const std::uint64_t update = ++held->second.lease_updates;
  core->executor().eval(
      lua::grant_extend, {ref.renewal.key, sync::grant_mark_key(name)},
      {std::to_string(lease.count()), ref.field, grant},
      [core, ref, lease, watchdog, grant_id, sent, update, done](std::exception_ptr error,
                                                                 net::Reply reply) {
        auto it = core->holds().find({ref.hold_key, ref.owner});
        if (it == core->holds().end() || it->second.lost || it->second.grant_id != grant_id) {
          if (done) done(false, sent);
          return;  // released (or lost) meanwhile
        }
        if (error || !reply.is_array() || reply.elements.empty()) {
          if (done) done(false, sent);
          return;  // may have run: the deadline stays the earlier one set before the send
        }
        if (reply.elements[0].integer == 1) {
          if (it->second.lease_updates == update) {
            core->watchdog().remove(ref.renewal);
            if (watchdog) {
              core->watchdog().add(ref.renewal, ref.report, sent);
            } else {
              core->watchdog().watch(ref.renewal, ref.report, lease, sent);
            }
          }
          if (done) done(true, sent);
          return;
        }
        core->watchdog().forget(ref.renewal);
        core->report_lost(ref.hold_key, ref.owner,
                          "granted, but the grant lease ended before the hold was extended");
        if (done) done(false, sent);
      },
      net::Retry::always);
}

}  // namespace

// Sets the granted hold's normal lease (grant_extend.lua), which also ends the grant mark.
// `granted`: the releaser's grant lease (its message said) and the acquisition's grant id.
// Sent when sync::grant_extension_delay says, from `registered` (a time no later than the
// grant was made, GrantLink::grant_made_after): a hold released within a third of the grant
// lease (a short section) never needs it, which keeps a tight loop at two scripts per section;
// a lease shorter than the grant lease is set at once (a holder killed in its section must
// free the lock within its own lease, not the releaser's grant lease: the chaos kill case saw
// two leases), and so is any lease while replies come late. Until it answers, the hold's local
// deadline is the grant lease from `registered`, or the earlier deadline of a shorter lease from
// the extension's send (send_grant_extension). Until it is sent it waits in Hold::grant_extension:
// a MultiLock that sets this member's final lease first sends it itself with that lease (issue 36),
// so the timer finds nothing left to send and never overrides the composite's lease.
void extend_grant(const std::shared_ptr<ClientCore>& core, const HoldRef& ref,
                  const std::string& name, Duration lease, bool watchdog, std::uint64_t grant_id,
                  sync::Clock::time_point registered, const sync::GrantTaken& granted) {
  auto held = core->holds().find({ref.hold_key, ref.owner});
  if (held == core->holds().end() || held->second.grant_id != grant_id) return;
  std::weak_ptr<ClientCore> weak = core;  // the hold is the core's: no cycle
  held->second.grant_extension = std::make_unique<Hold::GrantExtension>(
      [weak, ref, name, grant_id, grant = granted.id](Duration to_set, bool renewed,
                                                      Hold::GrantExtensionDone done) {
        if (auto live = weak.lock()) {
          send_grant_extension(live, ref, name, grant_id, grant, to_set, renewed, std::move(done));
        }
      });
  auto send = [weak, ref, lease, watchdog, grant_id] {
    auto live = weak.lock();
    if (!live) return;
    auto it = live->holds().find({ref.hold_key, ref.owner});
    if (it == live->holds().end() || it->second.grant_id != grant_id) return;
    auto extension = std::move(it->second.grant_extension);
    if (extension) (*extension)(lease, watchdog, nullptr);  // else sent already (a MultiLock)
  };
  const auto now = sync::Clock::now();
  const Duration delay = sync::grant_extension_delay(now, registered, granted.lease, lease,
                                                     core->executor().reply_lag(now));
  if (delay <= Duration{0}) return send();
  auto timer = std::make_shared<asio::steady_timer>(core->io(), delay);
  timer->async_wait([timer, send](std::error_code ec) {
    if (!ec) send();
  });
}


std::shared_ptr<sync::GrantLink> grant_link(const std::shared_ptr<ClientCore>& core,
                                            const LockKind& kind, const std::string& name,
                                            std::int64_t owner) {
  if (core->config().handoff != Handoff::grant) return nullptr;
  const HoldRef ref = kind.hold_ref(*core, name, owner);
  auto it = core->holds().find({ref.hold_key, owner});
  if (it != core->holds().end() && it->second.count > 0 && !it->second.lost) return nullptr;
  auto link = std::make_shared<sync::GrantLink>();
  link->channel = sync::grant_channel(name, core->id());
  link->field = ref.field;
  link->grant_lease = core->config().grant_lease;
  link->registry = &core->grants();
  link->deregister = {"ZREM", sync::grant_key(name), ref.field};
  return link;
}

std::vector<std::string> grant_attempt_args(sync::GrantLink& link, std::string lease,
                                            std::string field,
                                            std::optional<sync::Clock::time_point> deadline) {
  auto grant = link.next_attempt(deadline);
  return {std::move(lease), std::move(field), std::move(grant.id), std::move(grant.period),
          std::move(grant.attempt)};
}

std::vector<std::string> lock_grant_keys(const std::string& name) {
  return {name, sync::grant_key(name), sync::grant_id_key(name), sync::grant_mark_key(name)};
}

std::function<void()> grant_give_up(const std::shared_ptr<ClientCore>& core,
                                    std::shared_ptr<sync::GrantLink> link,
                                    const std::string& name, const std::string& token_key) {
  std::vector<std::string> keys{name, lock_channel(name), sync::grant_key(name),
                                sync::grant_id_key(name), sync::grant_mark_key(name),
                                sync::grant_channel_prefix(name)};
  if (!token_key.empty()) keys.push_back(token_key);
  return grant_give_up_step(core, std::move(link), std::move(keys), {});
}

std::function<void()> grant_give_up_step(const std::shared_ptr<ClientCore>& core,
                                         std::shared_ptr<sync::GrantLink> link,
                                         std::vector<std::string> keys,
                                         std::vector<std::string> extra_args) {
  return [core, link = std::move(link), keys = std::move(keys),
          extra_args = std::move(extra_args)] {
    if (!link->listed) return;
    std::vector<std::string> args{link->field, core->publish_command(),
                                  std::to_string(core->config().grant_lease.count()), link->id};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    // A late or repeated copy changes nothing but this acquisition's own registration and
    // grant (the grant mark names it): Retry::always is safe.
    core->executor().eval(
        lua::lock_grant_give_up, keys, std::move(args),
        [core, link](std::exception_ptr, net::Reply) { core->grants().remove(*link); },
        net::Retry::always);
  };
}

void grant_release_step(const std::shared_ptr<ClientCore>& core, const std::string& name,
                        const HoldRef& hold, Duration lease, const std::string& record,
                        const std::string& token_key, net::ReplyHandler handler) {
  std::vector<std::string> keys{name,
                                lock_channel(name),
                                record,
                                sync::grant_key(name),
                                sync::grant_id_key(name),
                                sync::grant_mark_key(name),
                                sync::grant_channel_prefix(name)};
  if (!token_key.empty()) keys.push_back(token_key);
  acked_release(core, hold, lua::lock_grant_release, std::move(keys),
                {"0", std::to_string(lease.count()), hold.field,
                 std::to_string(lock_release_record_ttl_ms(*core)), core->publish_command(),
                 std::to_string(core->config().grant_lease.count())},
                record, std::move(handler));
}

sync::AttemptResult read_grant_reply(sync::GrantLink& link, const net::Reply& reply) {
  if (reply.is_integer() && reply.integer == -3) return sync::AttemptResult{true, 0};
  auto result = parse_nil_or_ttl(reply);
  if (!result.acquired) {
    link.refused();
    result.ttl_ms = link.cap_wait(result.ttl_ms);
  }
  return result;
}



}  // namespace redisync::detail
