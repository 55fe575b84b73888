// SPDX-License-Identifier: Apache-2.0
// One chaos run: a lock server (or several), a separate resource server holding the counter,
// P chaos_worker processes, and the fault injectors the cases use.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chaos/history.h"
#include "support/fault_proxy.h"
#include "support/redis_server.h"

namespace redisync::chaos {

struct RunParams {
  std::string kind = "lock";  // lock | fair | fenced | rw-mix | nonreentrant |
                              // nonreentrant-fair | semaphore | pes | latch | redlock |
                              // broken-* ... (chaos_worker.cpp, lockers.cpp)
  int lock_servers = 1;       // redlock: one Lock per server
  int workers = 0;            // 0: $REDISYNC_CHAOS_WORKERS or 8
  long duration_ms = 0;       // 0: $REDISYNC_CHAOS_MS or 6000
  long watchdog_ms = 1500;
  long wait_ms = 3000;
  long hold_ms = 2;
  long think_ms = 2;  // pause after each section (latch: between count-downs)
  long timeout_ms = 1000;
  long retry_attempts = 3;
  long long hang_slack_ms = 6000;  // an attempt longer than wait + this counts as hung
  int permits = 2;                 // semaphore, pes: the permits of the semaphore
  /// Each worker reaches lock server 0 through its own FaultProxy (proxy(w)), so a fault can
  /// hit one worker while the others still reach the server.
  bool proxied = false;
  /// A holder told of the loss skips its write (false: writes anyway, see chaos_worker.cpp).
  bool heed_notice = true;
  /// Extra flags for one worker (they override the common ones), e.g. {0, {"--hold-ms", "3000"}}.
  std::map<int, std::vector<std::string>> worker_args = {};
  /// Extra redis-server arguments for the lock servers (e.g. maxmemory).
  std::vector<std::string> lock_server_args = {};
  /// Lock server 0 gets a replica, which replicates through replication_proxy() (so a case can
  /// cut the stream) and which fail_over() promotes. Needs `proxied`.
  bool replica = false;
  /// False: the workers' lock writes do not WAIT for replicas (--replica-ack 0).
  bool replica_ack = true;
};

/// CLOCK_MONOTONIC in ns (the clock of the history file).
long long mono_ns();
/// The run length a case gets by default: $REDISYNC_CHAOS_MS or 6000.
long default_duration_ms();
/// Workers of the rw-mix kind that read (odd ids; chaos_worker.cpp).
bool is_reader(const std::string& kind, int worker);

class ChaosRun {
 public:
  explicit ChaosRun(RunParams params);
  ~ChaosRun();  // SIGKILLs workers still running
  ChaosRun(const ChaosRun&) = delete;
  ChaosRun& operator=(const ChaosRun&) = delete;

  const RunParams& params() const { return params_; }
  test::RedisServer& lock_server(int i = 0) { return *lock_servers_.at(static_cast<size_t>(i)); }
  test::RedisServer& resource() { return resource_; }
  /// The proxy in front of worker w's lock connections (params().proxied only).
  test::FaultProxy& proxy(int w) { return *proxies_.at(static_cast<size_t>(w)); }
  /// params().replica only: the replica of lock server 0, and the proxy its replication
  /// stream goes through.
  test::RedisServer& replica() { return *replica_; }
  test::FaultProxy& replication_proxy() { return *replication_proxy_; }
  /// params().replica only: a failover as a virtual address would do it. SIGKILLs lock server
  /// 0, promotes the replica (REPLICAOF NO ONE), points every worker's proxy at it and resets
  /// the workers' connections (they reconnect to the promoted replica). Counts one data-loss
  /// fault: whatever the replica had not received is gone. Throws std::runtime_error if the
  /// replica refuses the promotion.
  void fail_over();
  /// Counts a fault the case injected through the proxy or the server (kills and pauses
  /// through this class count themselves). data_loss: the server may forget locks (restart
  /// without persistence, FLUSHALL, eviction, failover). The checker bounds the overlaps
  /// explained by faults by these counts.
  void note_fault(bool data_loss = false);
  /// Waits (up to `limit`) until every worker has ended a section it held (ok or lost),
  /// counting only sections acquired at or after `since_ns` (mono_ns()); true if they all did.
  bool wait_every_worker_held(std::chrono::milliseconds limit, long long since_ns = 0) const;
  /// Waits (up to `limit`) until worker w is inside a critical section; returns it.
  std::optional<Section> wait_in_section(int w, std::chrono::milliseconds limit) const;
  /// Waits (up to `limit`) until a worker other than w is inside a critical section.
  std::optional<Section> wait_other_in_section(int w, std::chrono::milliseconds limit) const;
  const std::string& lock_name() const { return name_; }

  /// Before start(): the first worker inside a section `after` the start SIGSTOPs itself
  /// right after reading the counter (see chaos_worker.cpp); wait_self_stopped() finds it.
  void stop_self_after(std::chrono::milliseconds after) { stop_self_at_ms_ = after.count(); }
  /// Spawns the workers; they run for params().duration_ms.
  void start();
  /// Sleeps until `offset` after start() (no-op if already past).
  void sleep_until(std::chrono::milliseconds offset) const;

  /// Stops a worker inside a critical section that still holds the lock on the server
  /// (checked after the stop with HEXISTS of its owner field): the first worker to enter a
  /// section after the request stops itself there (--stop-request). Tries for up to `limit`;
  /// nullopt if none could be caught. Never picks a worker that was stopped or killed before.
  std::optional<Section> stop_a_holder(std::chrono::milliseconds limit);
  /// Waits (up to `limit`) until a worker has stopped itself (stop_self_after()) and
  /// returns the section it is in; nullopt if none did.
  std::optional<Section> wait_self_stopped(std::chrono::milliseconds limit);
  /// SIGKILLs the worker of `held` and records the time for the checker.
  void kill_worker(const Section& held);
  /// SIGKILLs worker w (wherever it is) and records the time.
  void kill_worker(int w);
  /// SIGCONTs the worker of `held`.
  void continue_worker(const Section& held);

  /// Waits for every worker to exit (bounded: duration + 60 s, then SIGKILL). Returns
  /// problems: a worker that hung, or exited non-zero without having been killed.
  std::vector<std::string> finish();
  /// Reads the history and the counter, runs the checker, prints the summary line
  /// "chaos <label>: ... faults=<faults>" to stdout.
  Verdict verdict(const std::string& label, const std::string& faults);
  /// The history file's path (the latch case reads its own lines there).
  const std::string& history_path() const { return history_; }
  /// The history file as it stands.
  History history() const { return read_history(history_); }
  /// The output of every worker (for failure messages).
  std::string worker_logs() const;

 private:
  RunParams params_;
  std::vector<std::unique_ptr<test::RedisServer>> lock_servers_;
  test::RedisServer resource_;
  std::string name_;
  std::string history_;
  std::vector<pid_t> pids_;
  std::string stop_request_path() const;
  std::vector<std::string> logs_;
  std::vector<int> exit_codes_;
  std::map<int, long long> killed_;
  std::vector<int> touched_;  // workers stopped or killed
  std::vector<std::unique_ptr<test::FaultProxy>> proxies_;
  std::unique_ptr<test::FaultProxy> replication_proxy_;
  std::unique_ptr<test::RedisServer> replica_;
  bool holds_on_server(const Section& held);
  // An open section of a worker `which` accepts, once there is one (up to `limit`).
  std::optional<Section> wait_open_section(const std::function<bool(int)>& which,
                                           std::chrono::milliseconds limit) const;
  std::map<int, std::vector<std::pair<long long, long long>>> paused_;
  int faults_ = 0;
  int data_loss_faults_ = 0;
  long long stop_self_at_ms_ = -1;
  std::chrono::steady_clock::time_point started_{};
};

}  // namespace redisync::chaos
