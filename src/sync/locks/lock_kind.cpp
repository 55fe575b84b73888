#include "sync/locks/lock_kind.h"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <algorithm>
#include <charconv>
#include <iostream>
#include <optional>
#include <utility>

#include "lua/scripts.h"
#include "lua/with_preludes.h"
#include "net/server_text.h"
#include "sync/durations.h"
#include "sync/identity.h"
#include "sync/metrics_report.h"

namespace redisync::detail {

HoldRef LockKind::hold_ref(const ClientCore& core, const std::string& name,
                           std::int64_t owner) const {
  HoldRef h;
  h.hold_key = name + hold_suffix();
  h.owner = owner;
  const std::string owner_field = core.owner_field(owner);
  h.field = owner_field + field_suffix();
  h.renewal = sync::RenewalKey{name, h.field, renewal_kind()};
  // The Client's lost handler reads the owner from "<client id>:<owner>".
  h.report = sync::RenewalKey{h.hold_key, owner_field};
  return h;
}

std::string LockKind::describe(const ClientCore& core, const std::string& name) const {
  return noun() + " '" + name + "' on " + core.config().describe();
}

void LockKind::is_locked(const std::shared_ptr<ClientCore>& core, const std::string& name,
                         BoolDone done) const {
  const std::string what = "querying " + describe(*core, name);
  core->executor().execute(
      {"EXISTS", name},
      [done, what](std::exception_ptr error, net::Reply reply) {
        error = reply_error(error, reply, what);
        done(error, !error && reply.integer == 1);
      },
      net::Retry::always);
}

std::exception_ptr reply_error(std::exception_ptr error, const net::Reply& reply,
                               const std::string& what) {
  if (error || !reply.is_error()) return error;
  return net::server_error(reply, what);
}

std::exception_ptr too_long_lease(Duration lease, const std::string& what) {
  try {
    sync::check_lease(lease, "lease for " + what);
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

std::exception_ptr outcome_error(ReleaseOutcome outcome, const std::string& what,
                                 std::int64_t owner) {
  const std::string by = " owner " + std::to_string(owner);
  if (outcome == ReleaseOutcome::not_held) {
    return std::make_exception_ptr(NotOwnerError("redisync: " + what + " is not held by" + by));
  }
  if (outcome == ReleaseOutcome::lost) {
    return std::make_exception_ptr(LockLostError("redisync: " + what + " was lost by" + by +
                                                 " before release (lease expired or key removed)"));
  }
  return nullptr;
}

bool known_lost(const std::shared_ptr<ClientCore>& core, const std::string& hold_key,
                std::int64_t owner) {
  auto look = [&] {
    auto it = core->holds().find({hold_key, owner});
    return it != core->holds().end() && it->second.lost;
  };
  // On the I/O thread (an async holder's completion or coroutine, the lost-lock handler) the
  // table is read in place: a blocking call would wait for itself.
  if (core->on_io_thread()) return look();
  return core->call<bool>([&](auto done) { done(nullptr, look()); });
}

net::Reply query(const std::shared_ptr<ClientCore>& core, std::vector<std::string> args,
                 const std::string& what) {
  return core->call<net::Reply>([&](auto done) {
    core->executor().execute(
        std::move(args),
        [done, what](std::exception_ptr error, net::Reply reply) {
          done(reply_error(error, reply, what), std::move(reply));
        },
        net::Retry::always);
  });
}

void lock_message_policy(net::Channel& channel, const std::string& payload) {
  if (payload == "0") {
    channel.wake_one();
  } else {
    channel.wake_all();
  }
}

std::string release_record_key(const std::string& name) {
  return "redisson_unlock_latch:" + sync::hash_tag(name) + ":" + sync::random_request_id();
}

std::string lock_channel(const std::string& name) {
  return "redisson_lock__channel:" + sync::hash_tag(name);
}

ArgsFn fixed_args(std::vector<std::string> args) {
  return [args = std::move(args)] { return args; };
}

ArgsFn publish_guarded_args(const ClientCore& core, ArgsFn args, std::string channel) {
  return [args = std::move(args), command = core.publish_command(),
          channel = std::move(channel)] {
    return lua::publish_guard_args(args(), command, channel);
  };
}

sync::AttemptResult parse_nil_or_ttl(const net::Reply& reply) {
  if (reply.is_nil()) return {true, 0};
  if (reply.is_integer()) return {false, reply.integer};
  throw ServerError("unexpected reply " + reply.to_string(), reply.to_string());
}

sync::AcquireLoop::AttemptFn script_attempt(const std::shared_ptr<ClientCore>& core,
                                            const lua::Script& script,
                                            std::vector<std::string> keys, ArgsFn args,
                                            std::string what, ReplyParser parse, UndoFn undo) {
  if (!parse) parse = parse_nil_or_ttl;
  return [core, script = &script, keys = std::move(keys), args = std::move(args),
          what = "acquiring " + what, parse, undo](sync::AcquireLoop::AttemptDone cb) {
    // The send time of this attempt: a hold it takes counts its local lease deadline from
    // it, whichever path (loop, one attempt, spin loop) reports it (docs/safety.md).
    const auto sent = sync::Clock::now();
    auto on_reply = [core, cb, what, parse, undo, sent](std::exception_ptr error,
                                                        net::Reply reply, int acked) {
      error = reply_error(error, reply, what);
      if (error) return cb(error, {});
      sync::AttemptResult result;
      try {
        result = parse(reply);
      } catch (const Error&) {
        error = std::current_exception();
      } catch (const std::exception& e) {
        error = std::make_exception_ptr(ServerError(what + ": " + e.what(), reply.to_string()));
      }
      if (!error && result.acquired && acked == 0 && undo) {
        // No replica has the hold: a failover now would lose it. Undo it and let the loop
        // try again (docs/wire-format.md §1.7).
        auto timeout = std::make_exception_ptr(TimeoutError(
            "redisync: " + what + ": no replica acknowledged the acquire within " +
            std::to_string(core->config().slaves_sync_timeout.count()) +
            " ms (WAIT); the hold was rolled back"));
        return undo([cb, timeout] { cb(timeout, {}); });
      }
      // Outside the handler: the loop's continuation must not run inside a catch block.
      std::optional<sync::DecidingAttempt> deciding;
      if (!error && result.acquired) deciding.emplace(sent);
      cb(std::move(error), result);
    };
    if (undo) {
      core->executor().eval_acked(*script, keys, args(), std::move(on_reply), net::Retry::never);
    } else {
      core->executor().eval(*script, keys, args(),
                            [on_reply = std::move(on_reply)](std::exception_ptr error,
                                                             net::Reply reply) {
                              on_reply(std::move(error), std::move(reply), -1);
                            });
    }
  };
}

UndoFn release_undo(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                    const std::string& name, std::int64_t owner, Duration lease) {
  return [core, kind, name, owner, lease](std::function<void()> then) {
    const std::string record = release_record_key(name);
    HoldRef hold = kind->hold_ref(*core, name, owner);
    hold.undo = true;
    kind->release_step(core, name, hold, lease, record,
                       [then = std::move(then)](std::exception_ptr, net::Reply) { then(); });
  };
}

sync::AcquireLoop::AttemptFn hold_count_check(
    const std::shared_ptr<ClientCore>& core, const KindPtr& kind, const std::string& name,
    std::int64_t owner, std::function<void(sync::AcquireLoop::AttemptDone)> on_acquired) {
  return [core, kind, name, owner,
          on_acquired = std::move(on_acquired)](sync::AcquireLoop::AttemptDone cb) {
    const HoldRef ref = kind->hold_ref(*core, name, owner);
    auto it = core->holds().find({ref.hold_key, owner});
    const long long local = it == core->holds().end() || it->second.lost ? 0 : it->second.count;
    core->executor().execute(
        {"HGET", name, ref.field},
        [cb, on_acquired, local](std::exception_ptr error, net::Reply reply) {
          if (error) return cb(error, {});
          if (reply.is_error()) {
            return cb(std::make_exception_ptr(ServerError(
                          "redisync: rechecking an acquire: " + reply.str, reply.str)),
                      {});
          }
          long long count = 0;  // absent, or not a count: not our acquire
          if (reply.is_string() && !net::parse_decimal(reply.str, count)) count = 0;
          if (count == local + 1) {
            if (on_acquired) return on_acquired(cb);
            return cb(nullptr, {true, 0});
          }
          cb(nullptr, {false, -1});
        },
        net::Retry::never);
  };
}

sync::AcquireLoop::AttemptFn hold_count_recheck(
    const std::shared_ptr<ClientCore>& core, const KindPtr& kind, const std::string& name,
    std::int64_t owner, sync::AcquireLoop::AttemptFn attempt,
    std::function<void(sync::AcquireLoop::AttemptDone)> on_acquired) {
  auto check = hold_count_check(core, kind, name, owner, std::move(on_acquired));
  return [check = std::move(check), attempt = std::move(attempt)](sync::AcquireLoop::AttemptDone cb) {
    check([cb, attempt](std::exception_ptr error, sync::AttemptResult r) {
      if (!error && r.acquired) return cb(nullptr, r);
      attempt(cb);
    });
  };
}

void start_pubsub_loop(const std::shared_ptr<ClientCore>& core, std::string channel,
                       std::optional<sync::Clock::time_point> deadline,
                       sync::AcquireLoop::AttemptFn attempt, AcquireDone done,
                       std::function<void()> on_give_up, sync::AcquireLoop::AttemptFn recheck,
                       sync::AcquireLoop::AttemptFn settle,
                       std::shared_ptr<sync::GrantLink> grant) {
  sync::AcquireLoop::Params params;
  params.channel = std::move(channel);
  params.policy = lock_message_policy;
  params.deadline = deadline;
  params.attempt = std::move(attempt);
  params.on_give_up = std::move(on_give_up);
  params.probe = std::move(core->pending_probe);  // the acquisition's, with a Metrics hook
  params.grant = std::move(grant);
  if (recheck) {
    params.recheck = std::move(recheck);
    params.settle = std::move(settle);
    params.retry_attempts = core->config().retry_attempts;
    params.retry_interval = core->config().retry_interval;
  }
  sync::AcquireLoop::start(core->executor(), std::move(params), std::move(done));
}

namespace {

// The release scripts record every outcome (docs/wire-format.md §1.8), "not held" (nil) as -1:
// neither Redisson's 0 and 1 nor the fair lock's 2. A copy answered from such a record says
// -1; it means what the copy that ran said, nil.
constexpr long long kRecordedNotHeld = -1;

net::Reply decode_release_reply(net::Reply reply) {
  if (reply.is_integer() && reply.integer == kRecordedNotHeld) return net::Reply{};
  return reply;
}

// `resent`: shared by every copy of one release; the executor sets it when it sends the
// release again after a copy that may have reached the server.
void acked_release_attempt(const std::shared_ptr<ClientCore>& core, const lua::Script& script,
                           std::vector<std::string> keys, std::vector<std::string> args,
                           std::string record, std::shared_ptr<bool> resent,
                           net::ReplyHandler handler, int resends_left) {
  auto again = [core, script = &script, keys, args, record, resent, handler, resends_left] {
    acked_release_attempt(core, *script, keys, args, record, resent, handler, resends_left - 1);
  };
  core->executor().eval_acked(
      script, std::move(keys), std::move(args),
      [core, record, resent, handler = std::move(handler), again = std::move(again),
       resends_left](std::exception_ptr error, net::Reply reply, int acked) {
        if (!error && !reply.is_error() && acked == 0 && resends_left > 0) return again();
        // A copy that may have reached the server was resent: that copy may still be on its
        // way (a connection given up is not a copy cancelled). It must find the record, so
        // the record is not swept; it expires (lock_release_record_ttl_ms).
        if (*resent && !error && !reply.is_error()) core->release_records().keep(record);
        handler(std::move(error), decode_release_reply(std::move(reply)));
      },
      net::Retry::recorded, resent);
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
    // Not swept (release_undo): its record expires, whatever copies were sent.
    return core->executor().eval(
        script, std::move(keys), std::move(args),
        [handler = std::move(handler)](std::exception_ptr error, net::Reply reply) {
          handler(std::move(error), decode_release_reply(std::move(reply)));
        },
        net::Retry::recorded);
  }
  acked_release_attempt(core, script, std::move(keys), std::move(args), record,
                        std::make_shared<bool>(false), std::move(handler),
                        core->config().retry_attempts);
}

void hash_release_step(const std::shared_ptr<ClientCore>& core, const std::string& name,
                       const HoldRef& hold, Duration lease, const std::string& record, bool publish,
                       net::ReplyHandler handler) {
  acked_release(core, hold, lua::lock_release, {name, lock_channel(name), record},
                {"0", std::to_string(lease.count()), hold.field,
                 std::to_string(lock_release_record_ttl_ms(*core)), core->publish_command(),
                 publish ? "1" : "0"},
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
  hash_release_step(core, name, hold, lease, record, true, std::move(handler));
}

void HashLockKind::force_step(const std::shared_ptr<ClientCore>& core, const std::string& name,
                              net::ReplyHandler handler) const {
  hash_force_step(core, name, true, std::move(handler));
}

namespace {

// Sets the granted hold's normal lease (the watchdog renewal step, one key). Sent when a
// third of the grant lease has passed since `registered` (the send time of the last attempt
// before the grant), or at once when that is past: a hold released sooner (a short section)
// never needs it, which keeps a tight loop at two scripts per section. Until it answers, the
// hold's local deadline is the grant lease from `registered`. Renewed: the hold's local
// deadline counts the normal lease (renewed by the watchdog, or fixed) from the extension's
// send time. Gone (the grant lease ended first): the hold is lost. An error leaves the grant
// lease's local deadline, which reports the hold lost unless the release comes first.
void extend_grant(const std::shared_ptr<ClientCore>& core, const HoldRef& ref, Duration lease,
                  bool watchdog, std::uint64_t grant_id, sync::Clock::time_point registered) {
  std::weak_ptr<ClientCore> weak = core;
  auto send = [weak, ref, lease, watchdog, grant_id] {
    auto live = weak.lock();
    if (!live) return;
    auto held = live->holds().find({ref.hold_key, ref.owner});
    if (held == live->holds().end() || held->second.lost || held->second.grant_id != grant_id) {
      return;  // released (or lost) already
    }
    const auto sent = sync::Clock::now();
    live->executor().eval(
        lua::lock_renew, {ref.renewal.key}, {std::to_string(lease.count()), ref.field},
        [core = live, ref, lease, watchdog, grant_id, sent](std::exception_ptr error,
                                                            net::Reply reply) {
          auto it = core->holds().find({ref.hold_key, ref.owner});
          if (it == core->holds().end() || it->second.lost || it->second.grant_id != grant_id) {
            return;  // released (or lost) meanwhile
          }
          if (error || !reply.is_array() || reply.elements.empty()) return;
          if (reply.elements[0].integer == 1) {
            core->watchdog().remove(ref.renewal);
            if (watchdog) {
              core->watchdog().add(ref.renewal, ref.report, sent);
            } else {
              core->watchdog().watch(ref.renewal, ref.report, lease, sent);
            }
            return;
          }
          core->watchdog().forget(ref.renewal);
          core->report_lost(ref.hold_key, ref.owner,
                            "granted, but the grant lease ended before the hold was extended");
        },
        net::Retry::always);
  };
  const auto due = registered + core->config().grant_lease / 3;
  if (due <= sync::Clock::now()) return send();
  auto timer = std::make_shared<asio::steady_timer>(core->io(), due);
  timer->async_wait([timer, send](std::error_code ec) {
    if (!ec) send();
  });
}

}  // namespace

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

std::function<void()> grant_give_up(const std::shared_ptr<ClientCore>& core,
                                    std::shared_ptr<sync::GrantLink> link,
                                    const std::string& name, const std::string& token_key) {
  return [core, link = std::move(link), name, token_key] {
    if (!link->listed) return;
    std::vector<std::string> keys{name, lock_channel(name), sync::grant_key(name),
                                  sync::grant_channel_prefix(name)};
    if (!token_key.empty()) keys.push_back(token_key);
    core->executor().eval(
        lua::with_preludes<lua::lock_grant_give_up, lua::grant_pass_on>(), std::move(keys),
        {link->field, core->publish_command(),
         std::to_string(core->config().grant_lease.count())},
        [core, link](std::exception_ptr error, net::Reply reply) {
          const bool released = !error && reply.is_integer() && reply.integer == 1;
          core->grants().gave_up(link->channel, link->field, released);
        },
        net::Retry::always);
  };
}

void grant_release_step(const std::shared_ptr<ClientCore>& core, const std::string& name,
                        const HoldRef& hold, Duration lease, const std::string& record,
                        const std::string& token_key, net::ReplyHandler handler) {
  std::vector<std::string> keys{name, lock_channel(name), record, sync::grant_key(name),
                                sync::grant_channel_prefix(name)};
  if (!token_key.empty()) keys.push_back(token_key);
  acked_release(core, hold, lua::with_preludes<lua::lock_grant_release, lua::grant_pass_on>(),
                std::move(keys),
                {"0", std::to_string(lease.count()), hold.field,
                 std::to_string(lock_release_record_ttl_ms(*core)), core->publish_command(),
                 std::to_string(core->config().grant_lease.count())},
                record, std::move(handler));
}

ReplyParser grant_parse(std::shared_ptr<sync::GrantLink> link) {
  return [link = std::move(link)](const net::Reply& reply) {
    if (reply.is_integer() && reply.integer == -3) {
      link->took_grant = true;
      return sync::AttemptResult{true, 0};
    }
    auto result = parse_nil_or_ttl(reply);
    if (!result.acquired) result.ttl_ms = link->cap_wait(result.ttl_ms);
    return result;
  };
}

void run_acquire(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                 const std::string& name, std::int64_t owner, Duration lease, Duration wait,
                 AcquireDone done, LoopStarter start) {
  asio::post(core->io(), [core, kind, name, owner, lease, wait, done = std::move(done),
                          start = std::move(start)]() mutable {
    if (lease > max_duration) {  // async callers reach here unchecked; nothing written yet
      return done(too_long_lease(lease, kind->noun() + " '" + name + "'"), false);
    }
    const bool watchdog = lease <= Duration{0};
    const Duration effective = watchdog ? core->config().lock_watchdog_timeout : lease;
    const auto deadline = sync::deadline_after(wait);
    std::shared_ptr<AcquireMeter> meter;  // null without a Metrics hook
    if (core->config().metrics) meter = start_acquire_meter(*core, kind->noun(), name);
    auto finished = [core, kind, name, owner, watchdog, effective, done, meter](
                        std::exception_ptr error, bool acquired) {
      Hold* held = nullptr;
      if (!error && acquired) {
        const HoldRef ref = kind->hold_ref(*core, name, owner);
        auto& hold = core->holds()[{ref.hold_key, owner}];
        if (hold.lost) hold = Hold{};  // a new hold after a lost one starts afresh
        ++hold.count;
        hold.lease = effective;
        hold.watchdog = hold.watchdog || watchdog;
        // The local lease deadline counts from the deciding attempt's send time (every
        // acquire step sets it: script_attempt), see docs/safety.md. The reply time is only
        // a fallback for a step that did not say, and the later one.
        const auto sent = sync::deciding_attempt_sent().value_or(sync::Clock::now());
        hold.leases.push_back({watchdog, sync::Clock::now() + effective, sent, effective});
        if (sync::deciding_grant()) {
          // Granted (sync/acquire/grant.h): on the server the hold has the short grant lease until
          // our extension lands; until it answers, that is the local deadline.
          core->watchdog().watch(ref.renewal, ref.report, core->config().grant_lease, sent);
          hold.grant_id = core->next_grant_id();
          extend_grant(core, ref, effective, watchdog, hold.grant_id, sent);
        } else if (watchdog) {
          core->watchdog().add(ref.renewal, ref.report, sent);
        } else {
          core->watchdog().watch(ref.renewal, ref.report, effective, sent);
        }
        held = &hold;
      }
      metrics_acquired(meter, error, acquired, held);
      done(error, acquired);
    };
    if (meter) core->pending_probe = meter->probe;  // for the loop start_loop starts
    if (start) {
      start(effective, deadline, std::move(finished));
    } else {
      kind->start_loop(core, name, owner, effective, wait, deadline, std::move(finished));
    }
    core->pending_probe.reset();
  });
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
  if (kind == ReleaseReply::whole_lock) last = !believed || it->second.count <= 1;
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
  const HoldRef ref = kind->hold_ref(*core, name, owner);
  auto it = core->holds().find({ref.hold_key, owner});
  const Duration lease = it != core->holds().end()
                             ? remaining_lease(it->second, core->config().lock_watchdog_timeout)
                             : core->config().lock_watchdog_timeout;
  // The release record makes a resend after a dropped connection safe (docs/wire-format.md §1.8).
  const std::string record = release_record_key(name);
  const std::string what = "releasing " + kind->describe(*core, name);
  // A release that ends the owner's last hold: while it is in flight, a loss the watchdog
  // finds (the local lease deadline passing while the reply is late) waits for its outcome
  // (Hold::releasing). Not for a read-write lock, whose release reply does not say whether
  // the caller's own hold was intact.
  if (it != core->holds().end() && it->second.count == 1 && !it->second.lost &&
      kind->release_reply() != ReleaseReply::whole_lock) {
    it->second.releasing = true;
  }
  kind->release_step(
      core, name, ref, lease, record,
      [core, kind, name, ref, record, what, done](std::exception_ptr error, net::Reply reply) {
        error = reply_error(error, reply, what);
        std::optional<std::string> deferred;  // a loss found while the release was in flight
        if (auto h = core->holds().find({ref.hold_key, ref.owner}); h != core->holds().end()) {
          h->second.releasing = false;
          deferred = std::exchange(h->second.deferred_loss, std::nullopt);
        }
        if (error) {
          // Unconfirmed: the hold may have been lost, as the watchdog found.
          if (deferred) core->report_lost(ref.hold_key, ref.owner, *deferred);
          return done(ReleaseOutcome::failed, error);
        }
        // Confirmed (released, or still held by the remaining holds): the hold was there when
        // the release ran, so the deferred loss never happened and is dropped. A lost outcome
        // is reported by the caller (unlock_checked() raises LockLostError; unlock() tells the
        // lost-lock handler, quiet_unlock).
        core->release_records().add(record);
        auto held = core->holds().find({ref.hold_key, ref.owner});
        const Hold before = held != core->holds().end() ? held->second : Hold{};
        const auto outcome = settle_release(*core, ref, reply, kind->release_reply());
        if (outcome == ReleaseOutcome::released && core->config().metrics) {
          metrics_released(*core, metrics_kind(kind->noun()), name, &before);
        }
        done(outcome, nullptr);
      });
}

void run_release(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                 const std::string& name, std::int64_t owner, ReleaseDone done) {
  asio::post(core->io(), [core, kind, name, owner, done = std::move(done)] {
    release_now(core, kind, name, owner, done);
  });
}

void log_quiet_unlock(const std::string& what, const std::string& why) noexcept {
  try {
    std::cerr << "redisync: unlock of " << what << ": " << why << "\n";
  } catch (...) {
  }
}

void quiet_unlock(const std::shared_ptr<ClientCore>& core, const std::string& hold_key,
                  std::int64_t owner, const sync::RenewalKey& renewal, const std::string& what,
                  std::function<void(ReleaseDone)> release, std::function<void()> finished) {
  auto it = core->holds().find({hold_key, owner});
  // The watchdog reports a loss it finds itself; one found only now is reported here.
  const bool reported = it != core->holds().end() && it->second.lost;
  release([core, hold_key, owner, renewal, what, reported, finished](ReleaseOutcome outcome,
                                                                     std::exception_ptr error) {
    try {
      if (outcome == ReleaseOutcome::lost && !reported) {
        core->report_lost(hold_key, owner,
                          "found at release: the lease expired or the key was removed");
      } else if (outcome == ReleaseOutcome::failed) {
        // Stop renewing the hold this unlock gave up, so the server's lease frees the lock.
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
        log_quiet_unlock(what, "the release did not complete (" + why +
                                   "); the hold is no longer renewed and the lock frees when "
                                   "its lease ends");
      } else if (outcome == ReleaseOutcome::not_held) {
        log_quiet_unlock(what, "not held by owner " + std::to_string(owner));
      }
    } catch (...) {
      // Never let a report take down the I/O thread.
    }
    finished();
  });
}

void run_force_release(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                       const std::string& name, BoolDone done) {
  asio::post(core->io(), [core, kind, name, done = std::move(done)] {
    const std::string what = "force-unlocking " + kind->describe(*core, name);
    kind->force_step(core, name,
                     [core, kind, name, what, done](std::exception_ptr error, net::Reply reply) {
                       error = reply_error(error, reply, what);
                       if (error) return done(error, false);
                       if (reply.integer == 1) {
                         core->watchdog().remove_all(name);
                         for (const auto& key : kind->force_hold_keys(name)) {
                           auto& holds = core->holds();
                           for (auto it = holds.begin(); it != holds.end();) {
                             it = it->first.first == key ? holds.erase(it) : std::next(it);
                           }
                         }
                       }
                       done(nullptr, reply.integer == 1);
                     });
  });
}

}  // namespace redisync::detail
