// SPDX-License-Identifier: Apache-2.0
// The internals a Client shares with its handles: the I/O thread, the executor, the
// watchdog, and the table of holds this process believes it has.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <asio/system_executor.hpp>

#include "net/executor.h"
#include "net/io_thread.h"
#include "redisync/client.h"
#include "redisync/errors.h"
#include "sync/acquire/blocking_result.h"
#include "sync/acquire/grant.h"
#include "sync/caller_intake.h"
#include "sync/hold/release_records.h"
#include "sync/hold/watchdog.h"
#include "sync/loop_turns.h"
#include "sync/trace_points.h"

namespace redisync::sync {
struct AcquireProbe;  // sync/acquire/acquire_loop.h
}

namespace redisync::detail {

class CancelSignal;  // sync/acquire/cancel_signal.h

/// What this process believes about one (lock, owner) hold. io thread only. A Client may
/// hold 100,000 (docs/performance.md, "Many locks"): what only some holds need is held out
/// of line.
struct Hold {
  int count = 0;
  Duration lease{0};  ///< lease used for re-entry / partial release (watchdog lease if 0)
  bool watchdog = false;
  bool lost = false;  ///< the watchdog found it gone; the next release reports LockLostError
  /// A release ending the last hold is in flight (release_now): a loss the watchdog finds
  /// meanwhile is kept in `deferred_loss` instead of reported. A release that is then
  /// confirmed proves the hold was intact until it ran (nothing is reported); one that fails
  /// reports it then.
  bool releasing = false;
  std::unique_ptr<std::string> deferred_loss;
  /// When the first hold was taken; set only with a Metrics hook (hold time).
  std::chrono::steady_clock::time_point since{};
  /// One entry per hold, in acquisition order (a release ends the latest): whether the
  /// watchdog renews it, else when its fixed lease ends (this machine's clock). A partial
  /// release keeps the key alive for what the remaining entries need (issue 22 item 2).
  struct Lease {
    bool watchdog = false;
    std::chrono::steady_clock::time_point ends{};
    /// When the acquire that took it was sent, and its lease: the local deadline of a fixed
    /// lease (Watchdog::fix) once no watchdog hold is left to renew the key.
    std::chrono::steady_clock::time_point sent{};
    Duration lease{0};
  };
  std::vector<Lease> leases;
  /// Set when a grant (Config::handoff = grant) took it: tells the extension of that grant
  /// from a later hold's.
  std::uint64_t grant_id = 0;
  /// Which run of holds this is: new when the first hold is taken, or the first after a loss
  /// (ClientCore::next_hold_lineage). A composite keeps its members' lineages, so a member
  /// lost and taken again by another acquisition is not taken for the composite's own.
  std::uint64_t lineage = 0;
  /// Answers whether a grant extension found the hold (it set the lease), and when it was sent.
  using GrantExtensionDone = std::function<void(bool held, std::chrono::steady_clock::time_point)>;
  /// A granted hold's extension (grant_extend.lua) not sent yet: sends it with the lease
  /// given (the watchdog's, renewed, when the flag is set). Whoever sends it takes it (resets
  /// it): its timer with the hold's own lease, or a MultiLock setting this member's final
  /// lease (MultiLockMember::set_expiry), so no later extension overrides that lease.
  using GrantExtension = std::function<void(Duration lease, bool watchdog, GrantExtensionDone)>;
  std::unique_ptr<GrantExtension> grant_extension;
  /// Lease-setting sends of this hold so far (a grant extension, a MultiLock's lease set):
  /// the reply of one that a later one followed does not move the local deadline later.
  std::uint64_t lease_updates = 0;
};

class ClientCore : public std::enable_shared_from_this<ClientCore> {
 public:
  explicit ClientCore(Config config);
  ~ClientCore();

  /// Stops the I/O thread after failing pending calls. Idempotent; not from the I/O thread.
  void shutdown();
  /// Part of shutdown(): the closing Client's last writes, sent together and waited for at
  /// most min(timeout, 1 s), so a dead server never holds up the close: the grant
  /// registrations of waits still pending are removed, and the release records queued for
  /// the sweeper are deleted (a short-lived Client would otherwise leave them for their TTL).
  void send_last_writes();

  asio::io_context& io() { return io_; }
  const Config& config() const { return config_; }
  /// config().describe(), computed once: error texts name the server with it, and building
  /// them on every call cost the hot path allocations.
  const std::string& server() const { return server_; }
  const std::string& id() const { return id_; }
  /// "<client id>:<owner>", the owner's field in a lock hash (built in one allocation: it is
  /// made several times per acquire and release).
  std::string owner_field(std::int64_t owner) const;

  // --- io thread only ---
  net::Executor& executor() { return *executor_; }
  sync::Watchdog& watchdog() { return *watchdog_; }
  /// Where completed releases leave their release record keys for deletion (docs/wire-format.md §1.8).
  sync::ReleaseRecordSweeper& release_records() { return *release_records_; }
  std::map<std::pair<std::string, std::int64_t>, Hold>& holds() {
    net::assert_io_thread(io_);
    return holds_;
  }
  /// Acquisitions started and not finished, per hold (same key as holds()): while one is on
  /// its way, the server may count a hold of that owner the Client does not count yet, so a
  /// release is not the owner's last (release_now).
  std::map<std::pair<std::string, std::int64_t>, int>& acquiring() {
    net::assert_io_thread(io_);
    return acquiring_;
  }
  /// Holds a recheck found and claimed for its acquisition, per hold, while the kind's own
  /// step on it (FencedLock's token) is on its way: not counted in holds() yet, and never
  /// claimed by another acquisition of the owner meanwhile (check_hold_count).
  std::map<std::pair<std::string, std::int64_t>, int>& claimed() {
    net::assert_io_thread(io_);
    return claimed_;
  }
  /// The holds of (hold key, owner) this Client counts: the hold's count (0 when there is none,
  /// or it is lost) plus the holds a recheck claimed for it (claimed()). What a recheck or an
  /// undo compares with the owner's count on the server. io thread only.
  long long local_hold_count(const std::pair<std::string, std::int64_t>& hold);
  /// Holds with a composite's undo of a possible hold under way (MultiLockMember): one at a
  /// time, so two undos never both take the one extra hold they read.
  std::set<std::pair<std::string, std::int64_t>>& undoing() {
    net::assert_io_thread(io_);
    return undoing_;
  }
  /// The grant-capable acquisitions waiting now (sync/acquire/grant.h).
  sync::GrantRegistry& grants() { return grants_; }
  const sync::GrantRegistry& grants() const { return grants_; }
  std::uint64_t next_grant_id() { return ++grant_ids_; }
  std::uint64_t next_hold_lineage() { return ++hold_lineages_; }
  /// Marks the hold lost and tells the user's handler.
  void report_lost(const std::string& key, std::int64_t owner, const std::string& reason);
  /// A PermitExpirableSemaphore permit (semaphore `name`, hex id) whose lease ran out before
  /// its release: remembered in lost_permits() and told to the user's handler.
  void report_lost_permit(const std::string& name, const std::string& id,
                          const std::string& reason);
  /// Permits (semaphore name, hex id) reported lost and not released or re-leased since: a
  /// release of one then says it was lost. io thread only.
  std::set<std::pair<std::string, std::string>>& lost_permits() {
    net::assert_io_thread(io_);
    return lost_permits_;
  }
  /// The permits with a lease whose deadline this Client watches (sync/counters/
  /// permit_lease_watch.h), by (semaphore name, raw id): the lease and the send time their
  /// local deadline counts from, and an epoch that changes whenever that watch is replaced or
  /// ended (a check of the server's expiry answered later than that changes nothing). I/O
  /// thread only.
  struct WatchedPermit {
    Duration lease;
    std::chrono::steady_clock::time_point sent;
    std::uint64_t epoch = 0;
  };
  std::map<std::pair<std::string, std::string>, WatchedPermit> watched_permits;
  std::uint64_t permit_watch_epochs = 0;
  /// Permits of permit-expirable semaphores this Client took while a Metrics hook is set, by
  /// semaphore name + '\0' + permit id: when each was taken (hold time) and when its lease
  /// ends (entries past it are swept; sync/metrics_report.h).
  struct MeteredPermit {
    std::chrono::steady_clock::time_point since, ends;
  };
  std::unordered_map<std::string, MeteredPermit> metered_permits;
  /// Entries of metered_permits past which the next taking sweeps out the ended leases: at
  /// least kMeteredPermitsSweepAbove, and twice what a sweep left.
  static constexpr std::size_t kMeteredPermitsSweepAbove = 4096;
  std::size_t metered_permits_sweep_above = kMeteredPermitsSweepAbove;
  /// "PUBLISH" or "SPUBLISH" (sharded cluster), for scripts that publish.
  const std::string& publish_command() const { return publish_command_; }
  /// Milliseconds a release record lives (docs/wire-format.md §1.8).
  long long release_record_ttl_ms() const;

  void set_lost_handler(std::function<void(const LockLostEvent&)> handler);
  /// Runs the user's lost-lock handler (or the default line on stderr) for `event`.
  void tell_lost(const LockLostEvent& event);

  /// True on this client's I/O thread (e.g. in an async completion or the lost-lock handler).
  bool on_io_thread() { return net::on_io_thread(io_); }
  /// Throws InvalidArgument on the I/O thread, where a blocking call would wait for itself.
  void check_not_io_thread() {
    if (on_io_thread()) throw InvalidArgument(std::string("redisync: ") + net::kBlockingOnIoThread);
  }

  /// True once shutdown began: nothing posted to the I/O thread runs any more. An async call
  /// on a handle that outlived its Client completes at once with closed_error() instead.
  bool closed() const { return closed_; }
  static std::exception_ptr closed_error() {
    return std::make_exception_ptr(ClientClosedError("redisync: client is closed"));
  }
  /// Runs `fail` on another thread (Asio's system executor): a start on a closed Client still
  /// completes after it returned, as on an open one (a caller may hold a lock that its
  /// completion takes: MultiLock's walk does). A handler bound to the I/O thread runs there
  /// too (wrap_handler): the closing Client's I/O thread may stop before it would run it.
  template <class F>
  static void fail_later(F fail) {
    asio::post(asio::system_executor(), [fail = std::move(fail)]() mutable {
      const DeliveringOffIoThread here;
      fail();
    });
  }

  /// Starts an async call: `start(std::move(done))` runs on the I/O thread. Once shutdown
  /// began, `fail(done)` runs instead, later, on another thread (fail_later); it completes
  /// `done` with closed_error(). Never both, never neither: a start admitted before the close
  /// is queued ahead of the shutdown's own work, so it runs and is told of the close as any
  /// call in flight is (a start that checked closed() and posted after the I/O thread
  /// stopped was never run, and its handler never called).
  template <class Done, class Fail, class Start>
  void post_start(Done done, Fail fail, Start start) {
    const Admission admitted(*this);
    if (!admitted) {
      return fail_later([done = std::move(done), fail = std::move(fail)]() mutable { fail(done); });
    }
    post_from_caller([done = std::move(done), start = std::move(start)]() mutable {
      start(std::move(done));
    });
  }

  /// Runs `work()` on the I/O thread, behind every call started before it (CallerIntake).
  template <class Work>
  void post_from_caller(Work work) {
    turns_.post_from_outside([this](auto handler) { intake_.push(std::move(handler)); },
                             std::move(work));
  }
  /// Runs `work` on the loop, posted from a thread that will not run it (a cancellation):
  /// it waits for no caller's linger (LoopTurns::post_from_outside).
  template <class Work>
  void post_from_outside(Work work) {
    turns_.post_from_outside(std::move(work));
  }

  /// Runs `start(done)` on the I/O thread and blocks until `done(error, value)` is called;
  /// rethrows the error. Throws ClientClosedError after shutdown, InvalidArgument on the I/O
  /// thread itself (it would wait forever).
  template <class T, class Start>
  T call(Start&& start) {
    auto result = std::make_shared<sync::BlockingResult<T>>();
    std::optional<Admission> admitted(std::in_place, *this);  // see post_start
    if (!*admitted) throw ClientClosedError("redisync: client is closed");
    check_not_io_thread();
    const ThreadLogConfig log_here(config_);  // lines raised while this thread runs the loop
    // This thread runs the loop until the outcome is in, unless another blocked caller runs
    // it (LoopTurns): the request is written and the reply read here, with no thread switch.
    turns_.serve(
        [&] {
          REDISYNC_TRACE_POINT("post");
          intake_.push([this, result, start = std::forward<Start>(start)]() mutable {
            REDISYNC_TRACE_POINT("io_run");
            try {
              start([this, result](std::exception_ptr error, T value) {
                // A second completion (ignored) may come after the call returned, and after
                // this Client is gone: it touches nothing but the result.
                if (result->ready().load(std::memory_order_acquire)) return;
                if (on_io_thread()) {
                  turns_.outcome_delivered();
                  result->complete(std::move(error), std::move(value));
                } else {
                  // Completed on another Client's loop (a composite's member): wake this
                  // loop's runner, which may be the blocked caller itself, in epoll_wait.
                  result->complete(std::move(error), std::move(value));
                  turns_.interrupt_runner();
                }
              });
            } catch (...) {
              result->fail(std::current_exception());
            }
          });
          admitted.reset();
        },
        result->ready());
    return result->take();
  }

 private:
  /// The command connections' requests in flight (CallerIntake admission). I/O thread.
  Backlog backlog() const;

  Config config_;
  std::string id_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  // What callers' threads start, in order, a turn at a time, no faster than replies come.
  CallerIntake intake_{io_, [this] { return backlog(); }};
  LoopTurns turns_;           // who runs io_ now: the I/O thread or a blocked caller
  sync::GrantRegistry grants_;  // outlives the executor (its grant channels route here)
  std::uint64_t grant_ids_ = 0;
  std::uint64_t hold_lineages_ = 0;
  std::unique_ptr<net::Executor> executor_;
  std::unique_ptr<sync::Watchdog> watchdog_;
  std::unique_ptr<sync::ReleaseRecordSweeper> release_records_;
  std::map<std::pair<std::string, std::int64_t>, Hold> holds_;
  std::map<std::pair<std::string, std::int64_t>, int> acquiring_;
  std::map<std::pair<std::string, std::int64_t>, int> claimed_;
  std::set<std::pair<std::string, std::int64_t>> undoing_;
  std::set<std::pair<std::string, std::string>> lost_permits_;
  std::string publish_command_ = "PUBLISH";
  std::string server_;  // config_.describe()
  std::mutex lost_mutex_;
  std::function<void(const LockLostEvent&)> lost_handler_;
  std::atomic<bool> closed_{false};
  /// Marks the thread of a fail_later delivery (delivering_closed_completion()).
  struct DeliveringOffIoThread {
    DeliveringOffIoThread();
    ~DeliveringOffIoThread();
    DeliveringOffIoThread(const DeliveringOffIoThread&) = delete;
    DeliveringOffIoThread& operator=(const DeliveringOffIoThread&) = delete;
  };
  /// Starts between their closed() check and their post to the I/O thread: shutdown waits
  /// for them, so each is either refused or queued ahead of the shutdown's own work.
  std::atomic<int> starting_{0};
  class Admission {
   public:
    explicit Admission(ClientCore& core) : core_(core) { core_.starting_.fetch_add(1); }
    ~Admission() { core_.starting_.fetch_sub(1); }
    Admission(const Admission&) = delete;
    Admission& operator=(const Admission&) = delete;
    /// Read after the count went up (both sequentially consistent): a shutdown that set
    /// closed_ after this read sees the count and waits for the post.
    explicit operator bool() const { return !core_.closed_.load(); }

   private:
    ClientCore& core_;
  };
  /// Makes this Client's Config the calling thread's for log lines (set_thread_log_config)
  /// while it lives.
  class ThreadLogConfig {
   public:
    explicit ThreadLogConfig(const Config& config);
    ~ThreadLogConfig();
    ThreadLogConfig(const ThreadLogConfig&) = delete;
    ThreadLogConfig& operator=(const ThreadLogConfig&) = delete;

   private:
    const Config* previous_;
  };
  std::thread thread_;
};

}  // namespace redisync::detail
