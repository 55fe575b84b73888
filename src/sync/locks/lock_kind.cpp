// SPDX-License-Identifier: Apache-2.0
#include "sync/locks/lock_kind.h"

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <algorithm>
#include <charconv>
#include <iostream>
#include <optional>
#include <utility>

#include "lua/scripts.h"
#include "lua/publish_guard.h"
#include "net/server_text.h"
#include "sync/acquire/grant.h"
#include "sync/acquire/hold_check.h"
#include "sync/durations.h"
#include "sync/identity.h"
#include "sync/metrics_report.h"

namespace redisync::detail {

HoldRef LockKind::hold_ref(const ClientCore& core, const std::string& name,
                           std::int64_t owner) const {
  HoldRef h;
  h.hold_key = hold_key(name);
  h.owner = owner;
  std::string owner_field = core.owner_field(owner);
  h.field = owner_field + field_suffix();
  h.renewal = sync::RenewalKey{name, h.field, renewal_kind()};
  // The Client's lost handler reads the owner from "<client id>:<owner>".
  h.report = sync::RenewalKey{h.hold_key, std::move(owner_field)};
  return h;
}

std::string LockKind::describe(const ClientCore& core, const std::string& name) const {
  const std::string kind = noun();
  std::string text;  // one allocation: built for every release and many acquires
  text.reserve(kind.size() + name.size() + core.server().size() + 7);
  text.append(kind).append(" '").append(name).append("' on ").append(core.server());
  return text;
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

namespace {

// Reads the hold table from any thread. On the I/O thread (an async holder's completion or
// coroutine, the lost-lock handler) in place: a blocking call would wait for itself.
template <class T, class Look>
T read_holds(const std::shared_ptr<ClientCore>& core, Look look) {
  if (core->on_io_thread()) return look();
  return core->call<T>([&](auto done) { done(nullptr, look()); });
}

}  // namespace

bool known_lost(const std::shared_ptr<ClientCore>& core, const std::string& hold_key,
                std::int64_t owner) {
  return read_holds<bool>(core, [&] {
    auto it = core->holds().find({hold_key, owner});
    return it != core->holds().end() && it->second.lost;
  });
}

std::uint64_t hold_lineage(const std::shared_ptr<ClientCore>& core, const std::string& hold_key,
                           std::int64_t owner) {
  return read_holds<std::uint64_t>(core, [&]() -> std::uint64_t {
    auto it = core->holds().find({hold_key, owner});
    return it == core->holds().end() || it->second.lost ? 0 : it->second.lineage;
  });
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

void lock_message_policy(net::Channel& channel, const std::string& payload, net::PublishedAfter) {
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

const lua::Script& publish_guarded(const ClientCore& core, const lua::Script& body) {
  return lua::with_publish_guard(body, core.config().handoff == Handoff::grant);
}

namespace {

// In grant mode this Client's grant channel of the lock `name`, which the guard also checks;
// empty in wake mode.
std::string guarded_grant_channel(const ClientCore& core, const std::string& name) {
  return core.config().handoff == Handoff::grant ? sync::grant_channel(name, core.id())
                                                 : std::string();
}

// `args` followed by what publish_guarded's guard reads (`grant` as above).
std::vector<std::string> with_guard_args(std::vector<std::string> args, const std::string& command,
                                         const std::string& grant, const std::string& channel) {
  return grant.empty() ? lua::publish_guard_args(std::move(args), command, channel)
                       : lua::grant_publish_guard_args(std::move(args), command, grant, channel);
}

}  // namespace

std::vector<std::string> publish_guarded_args(const ClientCore& core,
                                              std::vector<std::string> args,
                                              const std::string& channel,
                                              const std::string& name) {
  return with_guard_args(std::move(args), core.publish_command(),
                         guarded_grant_channel(core, name), channel);
}

std::runtime_error unexpected_reply(const net::Reply& reply) {
  return std::runtime_error("unexpected reply " + reply.to_string());
}

sync::AttemptResult parse_nil_or_ttl(const net::Reply& reply) {
  if (reply.is_nil()) return {true, 0};
  if (reply.is_integer()) return {false, reply.integer};
  throw unexpected_reply(reply);
}

namespace {

std::string acquiring(const AttemptRequest& request) { return "acquiring " + request.what(); }

// The attempt's outcome from its reply; `acked`: replicas that acknowledged it (-1: no WAIT).
void judge_attempt(const std::shared_ptr<AttemptRequest>& request, std::exception_ptr error,
                   const net::Reply& reply, int acked, sync::Clock::time_point sent,
                   const sync::AcquireSteps::Done& cb) {
  if (!error && reply.is_error()) error = net::server_error(reply, acquiring(*request));
  if (error) return cb(error, {});
  sync::AttemptResult result;
  try {
    result = request->parse(reply);
  } catch (const Error&) {
    error = std::current_exception();
  } catch (const std::exception& e) {  // the parser's unexpected_reply
    error = std::make_exception_ptr(
        ServerError("redisync: " + acquiring(*request) + ": " + e.what(), reply.to_string()));
  }
  if (!error && result.acquired && acked == 0 && request->undoable()) {
    // No replica has the hold: a failover now would lose it. Undo it and let the loop
    // try again (docs/wire-format.md §1.7).
    auto timeout = std::make_exception_ptr(TimeoutError(
        "redisync: " + acquiring(*request) + ": no replica acknowledged the acquire within " +
        std::to_string(request->client().config().slaves_sync_timeout.count()) +
        " ms (WAIT); the hold was rolled back"));
    return request->undo([cb, timeout] { cb(timeout, {}); });
  }
  // A hold it took counts its local lease deadline from the send (docs/safety.md).
  if (!error && result.acquired) result.sent = sent;
  // Outside the handler: the loop's continuation must not run inside a catch block.
  cb(std::move(error), result);
}

}  // namespace

void send_attempt(const std::shared_ptr<AttemptRequest>& request, sync::AcquireSteps::Done cb) {
  const auto sent = sync::Clock::now();
  auto& executor = request->client().executor();
  if (request->undoable()) {
    executor.eval_acked(
        request->script(), request->keys(), request->args(),
        [request, cb = std::move(cb), sent](std::exception_ptr error, net::Reply reply,
                                            int acked) {
          judge_attempt(request, std::move(error), reply, acked, sent, cb);
        },
        net::Retry::never);
  } else {
    executor.eval(request->script(), request->keys(), request->args(),
                  [request, cb = std::move(cb), sent](std::exception_ptr error, net::Reply reply) {
                    judge_attempt(request, std::move(error), reply, -1, sent, cb);
                  });
  }
}

void undo_acquire(const std::shared_ptr<ClientCore>& core, const LockKind& kind,
                  const std::string& name, std::int64_t owner, Duration lease,
                  std::function<void()> then) {
  const std::string record = release_record_key(name);
  HoldRef hold = kind.hold_ref(*core, name, owner);
  hold.undo = true;
  kind.release_step(core, name, hold, lease, record,
                    [then = std::move(then)](std::exception_ptr, net::Reply) { then(); });
}

namespace {

// The count of a hold read from a reply (absent, or not a count: 0, not our acquire).
long long hold_count_of(const net::Reply& reply) {
  long long count = 0;
  if (reply.is_string() && !net::parse_decimal(reply.str, count)) count = 0;
  return count;
}

// What hold_grant_check.lua read: {count, PTTL, mark}; nullopt for another shape.
std::optional<sync::HoldRead> read_hold_grant_check(const net::Reply& reply) {
  if (!reply.is_array() || reply.elements.size() != 3 || !reply.elements[1].is_integer()) {
    return std::nullopt;
  }
  sync::HoldRead read;
  read.count = hold_count_of(reply.elements[0]);
  read.pttl_ms = reply.elements[1].integer;
  if (reply.elements[2].is_string()) read.mark = reply.elements[2].str;
  return read;
}

}  // namespace

void check_hold_count(const std::shared_ptr<ClientCore>& core, const LockKind& kind,
                      const std::string& name, std::int64_t owner, const sync::GrantLink* own_grant,
                      const std::function<void(sync::AcquireLoop::AttemptDone)>& on_acquired,
                      sync::AcquireLoop::AttemptDone cb) {
  const HoldRef ref = kind.hold_ref(*core, name, owner);
  // Grant mode: a hold found may be a grant made to this owner and not taken yet, with the
  // releaser's short grant lease; the grant mark and the lock's expiry, read in the same
  // step, say so (sync/acquire/hold_check.h).
  const bool grant_mode = core->config().handoff == Handoff::grant;
  std::string grant_id = own_grant ? own_grant->id : std::string();
  // Only one acquisition of an owner on a lock is listed for grants (GrantRegistry::add).
  const bool another_waits = grant_mode && !(own_grant && own_grant->listed) &&
                             core->grants().waiting(sync::grant_channel(name, core->id()), ref.field);
  const auto sent = sync::Clock::now();
  auto on_reply = [core, cb, on_acquired, hold_id = std::make_pair(ref.hold_key, owner),
                  grant_mode, field = ref.field, grant_id = std::move(grant_id), another_waits,
                  sent](std::exception_ptr error, net::Reply reply) {
    if (error) return cb(error, {});
    if (reply.is_error()) {
      return cb(std::make_exception_ptr(ServerError(
                    "redisync: rechecking an acquire: " + reply.str, reply.str)),
                {});
    }
    auto parsed = read_hold_grant_check(reply);
    if (!parsed) {
      return cb(std::make_exception_ptr(ServerError(
                    "redisync: rechecking an acquire: unexpected reply " + reply.to_string(),
                    reply.to_string())),
                {});
    }
    sync::HoldRead read = std::move(*parsed);
    if (!grant_mode) read.mark.clear();  // no grant is ever made to a wake-mode owner
    // The local count as the reply is read, not as the check was sent: another acquisition
    // of this owner (a MultiLock's walks leave them side by side) may have counted the same
    // hold meanwhile, and one hold on the server is never two here. Replies come in order on
    // the one connection, so every acquisition that ran before this read and was answered is
    // counted by now; one not answered yet is unsure and rechecks after this one.
    const sync::AttemptResult result = sync::judge_hold(read, core->local_hold_count(hold_id),
                                                        field, grant_id, another_waits, sent);
    if (result.acquired && on_acquired) {
      // The kind's own step (FencedLock: its token) reports; what the check found stays
      // noted (a grant, the lease found). Until then the hold is claimed, not counted.
      ++core->claimed()[hold_id];
      return on_acquired([core, hold_id, cb, grant = result.grant, found = result.found](
                             std::exception_ptr e, sync::AttemptResult r) {
        if (auto c = core->claimed().find(hold_id); c != core->claimed().end()) {
          if (--c->second <= 0) core->claimed().erase(c);
        }
        if (!e && r.acquired) {
          r.grant = grant;
          r.found = found;
        }
        cb(e, r);
      });
    }
    cb(nullptr, result);
  };
  // The count and the lock's expiry in one step, in both modes: the hold found may be an
  // earlier acquisition's of this owner, and its lease on the server is what is read here
  // (AttemptResult::found). Reads only.
  core->executor().eval(lua::hold_grant_check, {name, sync::grant_mark_key(name)}, {ref.field},
                        std::move(on_reply), net::Retry::never);
}

namespace {

// What every lock kind's loop takes from its start and the Client's settings.
sync::AcquireLoop::Params loop_params(const ClientCore& core, LoopStart& start,
                                      std::shared_ptr<sync::AcquireSteps> steps) {
  sync::AcquireLoop::Params params;
  params.deadline = start.deadline;
  params.probe = std::move(start.probe);    // the acquisition's, with a Metrics hook
  params.cancel = std::move(start.cancel);  // an async acquisition's, if cancellable
  if (steps->can_recheck()) {
    params.retry_attempts = core.config().retry_attempts;
    params.retry_interval = core.config().retry_interval;
  }
  params.steps = std::move(steps);
  return params;
}

}  // namespace

void start_pubsub_loop(const std::shared_ptr<ClientCore>& core, LoopStart start,
                       std::shared_ptr<sync::AcquireSteps> steps,
                       std::shared_ptr<sync::GrantLink> grant) {
  auto params = loop_params(*core, start, std::move(steps));
  params.policy = lock_message_policy;
  params.grant = std::move(grant);
  sync::AcquireLoop::start(core->executor(), std::move(params), std::move(start.done));
}

void start_spin_loop(const std::shared_ptr<ClientCore>& core, LoopStart start,
                     std::shared_ptr<sync::AcquireSteps> steps, sync::BackoffSequence backoff) {
  auto params = loop_params(*core, start, std::move(steps));
  params.spin = std::make_shared<sync::BackoffSequence>(std::move(backoff));
  sync::AcquireLoop::start(core->executor(), std::move(params), std::move(start.done));
}

void run_acquire(const std::shared_ptr<ClientCore>& core, const KindPtr& kind,
                 const std::string& name, std::int64_t owner, Duration lease, Duration wait,
                 AcquireDone on_done, LoopStarter start, std::shared_ptr<CancelSignal> cancel) {
  core->post_start(
      std::move(on_done), [](auto& late) { late(detail::ClientCore::closed_error(), false); },
      [core, kind, name, owner, lease, wait, start = std::move(start),
       cancel = std::move(cancel)](auto done) mutable {
        if (lease > max_duration) {  // async callers reach here unchecked; nothing written yet
          return done(too_long_lease(lease, kind->noun() + " '" + name + "'"), false);
        }
        const bool watchdog = lease <= Duration{0};
        const Duration effective = watchdog ? core->config().lock_watchdog_timeout : lease;
        const auto deadline = sync::deadline_after(wait);
        std::shared_ptr<AcquireMeter> meter;  // null without a Metrics hook
        if (core->config().metrics) meter = start_acquire_meter(*core, kind->noun(), name);
        ++core->acquiring()[{kind->hold_key(name), owner}];
        // Kept while the acquisition waits: no second copy of the name (the hold key is
        // built again at the end).
        auto finished = [core, kind, name, owner, watchdog, effective, done = std::move(done),
                         meter](std::exception_ptr error, const sync::AcquireOutcome& outcome) {
          const bool acquired = outcome.acquired;
          const std::pair<std::string, std::int64_t> hold_id{kind->hold_key(name), owner};
          if (auto a = core->acquiring().find(hold_id); a != core->acquiring().end()) {
            if (--a->second <= 0) core->acquiring().erase(a);
          }
          Hold* held = nullptr;
          if (!error && acquired) {
            const HoldRef ref = kind->hold_ref(*core, name, owner);
            auto& hold = core->holds()[{ref.hold_key, owner}];
            if (hold.lost) hold = Hold{};  // a new hold after a lost one starts afresh
            if (hold.count == 0) hold.lineage = core->next_hold_lineage();
            ++hold.count;
            hold.lease = effective;
            hold.watchdog = hold.watchdog || watchdog;
            // The local lease deadline counts from the deciding attempt's send time (the
            // waiting loop's outcome), see docs/safety.md.
            const auto sent = outcome.sent;
            hold.leases.push_back({watchdog, sync::Clock::now() + effective, sent, effective});
            if (const auto& granted = outcome.grant) {
              // Granted (sync/acquire/grant.h): on the server the hold has the releaser's short
              // grant lease until our extension lands; until it answers, that is the local
              // deadline (the releaser's, as its message said: not this Client's setting).
              core->watchdog().watch(ref.renewal, ref.report, granted->lease, sent);
              hold.grant_id = core->next_grant_id();
              extend_grant(core, ref, name, effective, watchdog, hold.grant_id, sent, *granted);
            } else {
              if (watchdog) {
                core->watchdog().add(ref.renewal, ref.report, sent);
              } else {
                core->watchdog().watch(ref.renewal, ref.report, effective, sent);
              }
              // A hold a recheck found may be an earlier acquisition's (its outcome lost):
              // the server keeps it only as long as the recheck read, from the read's send.
              if (const auto& found = outcome.found) {
                core->watchdog().cap(ref.renewal, found->lease, found->read_sent);
              }
            }
            held = &hold;
          }
          metrics_acquired(meter, error, acquired, held);
          done(error, acquired);
        };
        LoopStart loop{effective, wait, deadline, probe_of(meter),
                       std::move(cancel), std::move(finished)};
        if (start) {
          start(std::move(loop));
        } else {
          kind->start_loop(core, name, owner, std::move(loop));
        }
      });
}

}  // namespace redisync::detail
