// SPDX-License-Identifier: Apache-2.0
// What every chaos worker process shares (chaos_worker.cpp, latch_worker.cpp): its options,
// the history file it appends to, its clock and the names of the library's errors.
#pragma once

#include <string>
#include <vector>

#include "redisync/errors.h"

namespace redisync::chaos_worker {

struct Options {
  int id = 0;
  std::string kind = "lock";
  std::vector<std::string> lock_urls;
  std::string resource_url;
  std::string name;
  std::string history;
  long duration_ms = 5000;
  long watchdog_ms = 1500;  // also the lease of a PermitExpirableSemaphore's permits
  long wait_ms = 3000;
  long hold_ms = 2;
  long think_ms = 2;
  long timeout_ms = 1000;
  long retry_attempts = 3;
  long stop_self_at_ms = -1;
  long heed_notice = 1;
  long permits = 2;  // semaphore kinds: the permits the semaphore is created with
  long replica_ack = 1;  // 0: lock writes do not WAIT for replicas (check_lock_synced_slaves off)
  std::string stop_claim;
  std::string stop_request;  // see chaos_worker.cpp: --stop-request
};

/// Parses the command line (usage in chaos_worker.cpp). Throws std::invalid_argument.
Options parse(int argc, char** argv);

/// CLOCK_MONOTONIC in ns (the clock of the history file).
long long mono_ns();

/// "ConnectionError", "TimeoutError", ... for the history file.
std::string error_class(const redisync::Error& e);

/// The history file, opened for appending. Not copyable.
class HistoryFile {
 public:
  explicit HistoryFile(const std::string& path);  // throws std::runtime_error
  ~HistoryFile();
  HistoryFile(const HistoryFile&) = delete;
  HistoryFile& operator=(const HistoryFile&) = delete;

  /// Appends one line with one write(): O_APPEND keeps the lines of concurrent writers whole.
  void line(const std::string& text) const;

 private:
  int fd_;
};

/// The CountDownLatch worker (latch_worker.cpp): even ids wait, odd ids count down.
int run_latch(const Options& o);

}  // namespace redisync::chaos_worker
