// SPDX-License-Identifier: Apache-2.0
// redisync::CountDownLatch: Redisson's RCountDownLatch (docs/wire-format.md §9, §13).
#include "redisync/count_down_latch.h"

#include "lua/scripts.h"
#include "redisync/errors.h"
#include "sync/acquire/acquire_loop.h"
#include "sync/client_core.h"
#include "sync/counters/counts.h"
#include "sync/identity.h"
#include "sync/metrics_report.h"
#include "sync/hold/recorded_step.h"

namespace redisync {

namespace {

// Spec §9: braces are always added around N, even when N contains braces (unlike TAG(N)).
std::string latch_channel(const std::string& name) {
  return "redisson_countdownlatch__channel__{" + name + "}";
}

// "0" = the latch opened; "1" = a new count was set or the latch was deleted. Every message
// makes all local waiters re-check the count: a delete opens the latch too (Redisson's own
// waiters only re-check on "0"), and a new count is never set while anybody waits (it needs
// the key to be absent, i.e. the latch open), so "1" costs nothing in practice.
// A "0" is also counted (Channel::mark): a waiter that was subscribed when the latch opened
// returns even if the count was set again before its re-check (issue 22).
void latch_message_policy(net::Channel& channel, const std::string& payload, net::PublishedAfter) {
  if (payload == "0") channel.mark();
  channel.wake_all();
}

std::string describe_latch(const detail::ClientCore& core, const std::string& name) {
  return "count-down latch '" + name + "' on " + core.server();
}

net::Reply run(const std::shared_ptr<detail::ClientCore>& core,
               std::function<void(net::ReplyHandler)> send, const std::string& what) {
  auto reply = core->call<net::Reply>([&](auto done) { send(done); });
  if (reply.is_error()) net::throw_server_error(reply, what);
  return reply;
}

// A wait's one step (the count read) as a record: the latch is open when its count is 0
// (absent); no lease bounds the wait, a message (or the deadline) ends it. An opening
// announced while the wait was joined to the channel counts even if the count was set again
// before the read (issue 22).
class LatchWaitSteps final : public sync::AcquireSteps {
 public:
  LatchWaitSteps(std::shared_ptr<detail::ClientCore> core, std::string name,
                 std::shared_ptr<net::Channel> channel)
      : core_(std::move(core)),
        name_(std::move(name)),
        channel_(std::move(channel)),
        openings_(channel_->marks()) {}

  std::string channel() const override { return channel_->name(); }

  void attempt(Done done) override {
    if (channel_->marks() != openings_) return done(nullptr, {true, -1});  // opened meanwhile
    core_->executor().execute(
        {"GET", name_},
        [done = std::move(done), what = "waiting on " + describe_latch(*core_, name_)](
            std::exception_ptr error, net::Reply reply) {
          bool open = false;
          if (!error) open = sync::parse_count(reply, what, error) <= 0;
          if (error) return done(std::move(error), {});  // passed on outside the catch block
          done(nullptr, {open, -1});
        },
        net::Retry::always);
  }

 private:
  std::shared_ptr<detail::ClientCore> core_;
  std::string name_;
  std::shared_ptr<net::Channel> channel_;  // held for the whole wait (openings are counted)
  std::uint64_t openings_;
};

}  // namespace

namespace detail {

void start_latch_wait(const std::shared_ptr<ClientCore>& core, const std::string& name,
                      Duration wait, std::function<void(std::exception_ptr, bool)> on_done,
                      std::shared_ptr<CancelSignal> cancel) {
  core->post_start(
      std::move(on_done), [](auto& late) { late(detail::ClientCore::closed_error(), false); },
      [core, name, wait, cancel = std::move(cancel)](auto done) mutable {
        sync::AcquireLoop::Params params;
        params.policy = latch_message_policy;
        params.deadline = sync::deadline_after(wait);
        // Joined before the first read, so openings announced while we wait are counted.
        auto channel =
            core->executor().subscriber().join(latch_channel(name), latch_message_policy);
        params.steps = std::make_shared<LatchWaitSteps>(core, name, channel);
        // Reading the count is idempotent: connection errors and timeouts are simply retried.
        params.retry_attempts = core->config().retry_attempts;
        params.retry_interval = core->config().retry_interval;
        // With a Metrics hook, a wait that sees the latch open counts as an acquisition.
        auto meter = start_acquire_meter(*core, "count down latch", name);
        params.probe = probe_of(meter);
        params.cancel = std::move(cancel);  // an async wait's, if cancellable
        sync::AcquireLoop::start(
            core->executor(), std::move(params),
            [core, channel, meter, done = std::move(done)](
                std::exception_ptr error, const sync::AcquireOutcome& outcome) {
              metrics_acquired(meter, error, outcome.acquired, nullptr);
              core->executor().subscriber().leave(channel);
              done(std::move(error), outcome.acquired);
            });
      });
}

}  // namespace detail

CountDownLatch::CountDownLatch(std::shared_ptr<detail::ClientCore> core, std::string name)
    : core_(std::move(core)), name_(std::move(name)) {
  if (name_.empty()) throw InvalidArgument("redisync: count-down latch name must not be empty");
  sync::check_cluster_name(core_->config().topology == Topology::cluster, name_,
                           "count-down latch", /*always_braced=*/true);
}

void CountDownLatch::count_down(std::int64_t n) {
  if (n < 0) {
    throw InvalidArgument("redisync: n for count_down of " + describe_latch(*core_, name_) +
                          " must be >= 0 (got " + std::to_string(n) + ")");
  }
  if (n == 0) return;
  // With a record, so a resend after a lost reply counts down once (sync/hold/recorded_step.h).
  core_->call<net::Reply>([&](auto done) {
    sync::run_recorded_step(
        core_, lua::count_down_latch_count_down,
        {name_, latch_channel(name_), sync::step_record_key("redisync_latch_count_down", name_)},
        {std::to_string(n), core_->publish_command(),
         std::to_string(sync::step_record_ttl_ms(*core_))},
        "counting down " + describe_latch(*core_, name_), done);
  });
}

void CountDownLatch::wait() {
  core_->call<bool>(
      [&](auto done) { detail::start_latch_wait(core_, name_, Duration{-1}, done); });
}

bool CountDownLatch::wait_ms(Duration wait) {
  return core_->call<bool>(
      [&](auto done) { detail::start_latch_wait(core_, name_, wait, done); });
}

bool CountDownLatch::try_wait() const { return count() <= 0; }

bool CountDownLatch::try_set_count(std::int64_t count) {
  if (count < 1) {
    throw InvalidArgument("redisync: count for try_set_count of " +
                          describe_latch(*core_, name_) + " must be >= 1 (got " +
                          std::to_string(count) + "; a latch with count 0 is simply open)");
  }
  return run(
             core_,
             [&](net::ReplyHandler done) {
               core_->executor().eval(
                   lua::count_down_latch_try_set_count, {name_, latch_channel(name_)},
                   {std::to_string(count), core_->publish_command()}, std::move(done));
             },
             "setting the count of " + describe_latch(*core_, name_))
             .integer == 1;
}

std::int64_t CountDownLatch::count() const {
  const std::string what = "querying " + describe_latch(*core_, name_);
  auto reply = core_->call<net::Reply>([&](auto done) {
    core_->executor().execute({"GET", name_}, done, net::Retry::always);
  });
  return sync::parse_count(reply, what);
}

bool CountDownLatch::remove() {
  return run(
             core_,
             [&](net::ReplyHandler done) {
               core_->executor().eval(lua::count_down_latch_delete, {name_, latch_channel(name_)},
                                      {core_->publish_command()}, std::move(done));
             },
             "removing " + describe_latch(*core_, name_))
             .integer == 1;
}

}  // namespace redisync
