// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the lock-kind integration tests (fair, read-write, fenced, spin): client
// config for a test server, worker processes (support/worker.h), exclusion across processes.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"
#include "support/worker.h"

namespace redisync::test::kinds {

using namespace std::chrono_literals;

using redisync::test::config_for;

using redisync::test::expect_clean_exit;
using redisync::test::kill_worker;
using redisync::test::read_all;
using redisync::test::read_word;
using redisync::test::spawn_worker;

/// Runs `processes` workers of `kind-counter KIND` (`iterations` each) on one counter and
/// expects the exact total: mutual exclusion across processes.
inline void expect_exclusion_across_processes(RedisServer& server, const std::string& kind,
                                              int processes, int iterations) {
  const std::string name = unique_name(kind + ":");
  std::vector<pid_t> pids;
  for (int p = 0; p < processes; ++p) {
    pids.push_back(spawn_worker(
        {"kind-counter", kind, server.url(), name, "counter", std::to_string(iterations)}));
  }
  for (pid_t pid : pids) expect_clean_exit(pid);
  EXPECT_EQ(server.command({"GET", "counter"}).as_string(), std::to_string(processes * iterations));
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);
}

}  // namespace redisync::test::kinds
