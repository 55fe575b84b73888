// SPDX-License-Identifier: Apache-2.0
// The hidden `redisync demo-worker` subcommand: one contending process of `redisync demo`.
// In a loop until --deadline-ns it takes the demo lock (watchdog mode), runs a non-atomic
// read-modify-write of the demo counter, releases, and appends the section's times to its
// event file at once (so the lines survive a SIGKILL).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "kinds.h"

namespace redisync::cli {

inline constexpr const char* kAnyVictim = "any";

/// The keys of one demo run, all derived from the lock name.
struct DemoKeys {
  std::string lock;     ///< the contended lock
  std::string counter;  ///< the counter the critical section increments
  /// The demo sets it to kAnyVictim; the next worker inside the lock claims it (writes its
  /// id), announces its pid in `holder` and stalls there until it is killed.
  std::string victim;
  std::string holder;  ///< the stalled worker's pid, written from inside the lock

  static DemoKeys for_lock(const std::string& lock_name) {
    return {lock_name, lock_name + ":counter", lock_name + ":victim", lock_name + ":holder-pid"};
  }
};

struct DemoWorkerOptions {
  std::string redis_url;
  std::string lock_name = "redisync:demo";
  std::int64_t worker_id = 0;
  std::string events;
  std::int64_t start_at_ns = 0;
  std::int64_t deadline_ns = 0;
  std::int64_t watchdog_ms = 2000;
  std::string kind = "lock";  ///< one of kDemoKinds (kinds.h), by name or alias
};

/// The lock kinds `redisync demo --kind` accepts (a read-write-lock: its write lock).
inline constexpr Kind kDemoKinds[] = {Kind::lock, Kind::fair_lock, Kind::read_write_lock,
                                      Kind::fenced_lock};
/// The kind `text` names among kDemoKinds; throws UsageError naming them otherwise.
Kind demo_kind(const std::string& text);

/// Adds the hidden `demo-worker` subcommand.
CLI::App* add_demo_worker_command(CLI::App& app, DemoWorkerOptions& options);

int demo_worker_command(const DemoWorkerOptions& options);

}  // namespace redisync::cli
