// SPDX-License-Identifier: Apache-2.0
// Waiting for a replica that really replicates, before a test relies on it.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include "support/redis_server.h"
#include "support/server_stats.h"
#include "support/test_util.h"

namespace redisync::test {

/// True once `replicas` replicas of `master` (standalone, not cluster) acknowledge a write
/// made now, and the master started no full sync during the second after that: a replica
/// that holds its link. "connected_slaves:1" on the master, or "master_link_status:up" on the
/// replica, is not enough, nor is one acknowledged write: Redis 7.0.15 replicas behind the
/// test's fault proxy sometimes drop the link right after a full sync ("Receiving inline
/// protocol from master ... Desync?"), several times in a row, and reconnect a second later;
/// the acknowledgement of a full sync's offset can answer a WAIT just before such a drop, and
/// meanwhile the master may count the replica, then none. The write is a PUBLISH to a channel
/// nobody listens on: replicated, yet no key is left behind. Bounded by `limit`.
inline bool replicas_streaming(RedisServer& master, int replicas = 1,
                               std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  const auto acknowledged = [&] {
    master.command({"PUBLISH", "redisync-test:replication-probe", "1"});
    const Reply acked = master.command({"WAIT", std::to_string(replicas), "200"});
    return acked.kind == Reply::Kind::integer && acked.integer >= replicas;
  };
  return wait_until(
      [&] {
        const std::string syncs = info_field(master, "stats", "sync_full");
        if (syncs.empty() || !acknowledged()) return false;
        // A dropped replica reconnects within a second (replicationCron) and syncs again.
        std::this_thread::sleep_for(std::chrono::milliseconds(1200));
        return acknowledged() && info_field(master, "stats", "sync_full") == syncs;
      },
      limit, std::chrono::milliseconds(50));
}

}  // namespace redisync::test
