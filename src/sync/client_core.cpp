// SPDX-License-Identifier: Apache-2.0
#include "sync/client_core.h"

#include <charconv>
#include <condition_variable>
#include <mutex>

#include "log_line.h"
#include "sync/counters/permit_lease_watch.h"
#include "sync/identity.h"
#include "sync/trace_points.h"

namespace redisync::detail {

// Declared in the public headers of the primitives that complete async calls on the I/O thread.
asio::io_context& io_of(const std::shared_ptr<ClientCore>& core) { return core->io(); }

std::string ClientCore::owner_field(std::int64_t owner) const {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, owner).ptr;
  std::string field;
  field.reserve(id_.size() + 1 + static_cast<std::size_t>(end - digits));
  field.append(id_).append(1, ':').append(digits, end);
  return field;
}

Backlog ClientCore::backlog() const {
  if (!executor_) return {};
  return {executor_->in_flight(), executor_->reply_lag(std::chrono::steady_clock::now())};
}

ClientCore::ClientCore(Config config)
    : config_(std::move(config)),
      id_(sync::random_uuid()),
      work_(io_.get_executor()),
      turns_(io_, config_.busy_poll, [this] { return executor_->in_flight() > 0; }) {
  config_.validate();
  server_ = config_.describe();
  executor_ = std::make_unique<net::Executor>(io_, config_);
  watchdog_ = std::make_unique<sync::Watchdog>(
      *executor_, config_.lock_watchdog_timeout,
      static_cast<std::size_t>(config_.renewal_batch_size),
      [this](const sync::RenewalKey& k, const std::string& reason) {
        if (k.kind == sync::RenewalKind::permit_lease) {
          // Before a notice, the server's expiry (a Java client may have extended the lease).
          if (auto self = weak_from_this().lock()) {
            return permit_check_point(self, k.key, k.field, reason);
          }
          return report_lost_permit(k.key, k.field, reason);
        }
        // The field is "<client id>:<owner>"; recover the owner to find the hold.
        // Never throw on the I/O thread: an unexpected field shape reports owner 0.
        const auto colon = k.field.rfind(':');
        std::int64_t owner = 0;
        if (colon != std::string::npos) {
          const char* first = k.field.data() + colon + 1;
          std::from_chars(first, k.field.data() + k.field.size(), owner);
        }
        // The user is releasing its last hold of it: its release's outcome decides.
        if (auto it = holds_.find({k.key, owner}); it != holds_.end() && it->second.releasing) {
          if (!it->second.deferred_loss) {
            it->second.deferred_loss = std::make_unique<std::string>(reason);
          }
          return;
        }
        report_lost(k.key, owner, reason);
      });
  if (config_.metrics) {  // before the I/O thread starts
    watchdog_->set_metrics(config_.metrics.get());
    executor_->subscriber().set_metrics(config_.metrics.get());
  }
  release_records_ = std::make_unique<sync::ReleaseRecordSweeper>(
      io_, *executor_, config_.topology == Topology::cluster);
  thread_ = std::thread([this] {
    const ThreadLogConfig log_here(config_);  // lines raised here without a Client at hand
    turns_.run_io_thread();
  });
  if (config_.topology == Topology::cluster) {
    // A cluster is discovered now: the slot map routes every call, and whether its nodes
    // speak sharded pub/sub decides the publish command every script is given (docs/wire-format.md §1.5).
    try {
      const bool sharded = call<bool>([this](auto done) {
        executor_->start([this, done](std::exception_ptr error) {
          done(error, !error && executor_->sharded_pubsub());
        });
      });
      publish_command_ = sharded ? "SPUBLISH" : "PUBLISH";
    } catch (...) {
      shutdown();
      throw;
    }
  }
}

ClientCore::~ClientCore() { shutdown(); }

namespace {
thread_local bool delivering_closed = false;
}  // namespace

ClientCore::DeliveringOffIoThread::DeliveringOffIoThread() { delivering_closed = true; }
ClientCore::DeliveringOffIoThread::~DeliveringOffIoThread() { delivering_closed = false; }
bool delivering_closed_completion() noexcept { return delivering_closed; }

ClientCore::ThreadLogConfig::ThreadLogConfig(const Config& config)
    : previous_(set_thread_log_config(&config)) {}
ClientCore::ThreadLogConfig::~ThreadLogConfig() { set_thread_log_config(previous_); }

void ClientCore::shutdown() {
  if (closed_.exchange(true)) return;
  // A start admitted before closed_ was set posts its work now; it must be queued ahead of
  // the work below (ClientCore::post_start). Each takes a moment, so this wait is short.
  while (starting_.load() > 0) std::this_thread::yield();
  send_last_writes();
  std::promise<void> done;
  turns_.post_from_outside([this, &done] {  // at once, not after a caller's linger
    intake_.run_all();  // calls handed over since (none admitted: async execute's)
    watchdog_->stop();
    release_records_->stop();
    executor_->close();
    done.set_value();
  });
  done.get_future().wait();
  work_.reset();
  turns_.stop();
  if (thread_.joinable()) thread_.join();
}

void ClientCore::send_last_writes() {
  // Best effort: a bounded wait for the answers, then the close goes on.
  // Grant mode (sync/acquire/grant.h): the registrations of waits still pending are removed, so
  // no release grants the lock to a waiter of a closed client (it would hold the lock for the
  // grant lease, and its registration would otherwise live up to kGrantRegistration).
  // Release records: deleted now rather than left for their TTL (docs/wire-format.md §1.8);
  // the records kept for a resend that may still arrive are not among them.
  struct Pending {
    std::mutex m;
    std::condition_variable cv;
    bool counted = false;
    long long left = 0;  // answers still due; below 0 while answers outrun the count
  };
  auto pending = std::make_shared<Pending>();
  turns_.post_from_outside([this, pending] {
    // Every call admitted before the close runs first, so its registration or release record
    // is among those this step removes.
    intake_.run_all();
    auto answered = [pending] {
      std::lock_guard g(pending->m);
      --pending->left;
      pending->cv.notify_all();
    };
    long long sent = 0;
    if (config_.handoff == Handoff::grant) {
      for (auto& command : grants_.deregistrations()) {
        const std::string key = command.size() > 1 ? command[1] : std::string();
        executor_->execute(
            std::move(command), [answered](std::exception_ptr, net::Reply) { answered(); },
            net::Retry::never, key);
        ++sent;
      }
    }
    sent += static_cast<long long>(release_records_->flush_all(answered));
    {
      std::lock_guard g(pending->m);
      pending->left += sent;
      pending->counted = true;
    }
    pending->cv.notify_all();
  });
  const auto bound = std::min<Duration>(config_.timeout, Duration{1000});
  std::unique_lock lock(pending->m);
  pending->cv.wait_for(lock, bound, [&] { return pending->counted && pending->left == 0; });
}

long long ClientCore::release_record_ttl_ms() const {
  const long long attempts = std::max(config_.retry_attempts, 1);
  return (config_.timeout.count() + config_.retry_interval.count()) * attempts;
}

void ClientCore::set_lost_handler(std::function<void(const LockLostEvent&)> handler) {
  std::lock_guard lock(lost_mutex_);
  lost_handler_ = std::move(handler);
}

long long ClientCore::local_hold_count(const std::pair<std::string, std::int64_t>& hold) {
  net::assert_io_thread(io_);
  const auto it = holds_.find(hold);
  long long count = it == holds_.end() || it->second.lost ? 0 : it->second.count;
  if (const auto c = claimed_.find(hold); c != claimed_.end()) count += c->second;
  return count;
}

void ClientCore::report_lost(const std::string& key, std::int64_t owner,
                             const std::string& reason) {
  auto it = holds_.find({key, owner});
  if (it != holds_.end()) it->second.lost = true;
  tell_lost(LockLostEvent{key, owner, reason, {}});
}

void ClientCore::report_lost_permit(const std::string& name, const std::string& id,
                                    const std::string& reason) {
  lost_permits_.insert({name, id});
  tell_lost(LockLostEvent{name, 0, reason, id});
}

void ClientCore::tell_lost(const LockLostEvent& event) {
  std::function<void(const LockLostEvent&)> handler;
  {
    std::lock_guard lock(lost_mutex_);
    handler = lost_handler_;
  }
  if (handler) {
    try {
      handler(event);
    } catch (...) {
      // A throwing handler must not take down the I/O thread.
    }
    return;
  }
  try {
    if (event.permit_id.empty()) {
      detail::log_line(config_, "lock '" + event.name + "' held by owner " +
                                    std::to_string(event.owner) + " was lost: " + event.reason);
    } else {
      detail::log_line(config_, "permit " + event.permit_id + " of permit-expirable semaphore '" +
                                    event.name + "' was lost: " + event.reason);
    }
  } catch (...) {
  }
}

}  // namespace redisync::detail
