// Waiting for a replica that really replicates, before a test relies on it.
#pragma once

#include <chrono>
#include <string>

#include "support/redis_server.h"
#include "support/test_util.h"

namespace redisync::test {

/// True once `replicas` replicas of `master` (standalone, not cluster) acknowledge a write
/// made now, within `limit`. "connected_slaves:1" on the master, or "master_link_status:up" on
/// the replica, is not enough: Redis 7.0 replicas sometimes drop the link right after their
/// first full sync ("Receiving inline protocol from master ... Desync?") and sync again a
/// second later, and meanwhile the master may count the replica, then none. A replica that
/// acknowledges a write made after its sync has read past that point. The write is a PUBLISH
/// to a channel nobody listens on: replicated, yet no key is left behind.
inline bool replicas_streaming(RedisServer& master, int replicas = 1,
                               std::chrono::milliseconds limit = std::chrono::seconds(20)) {
  return wait_until(
      [&] {
        master.command({"PUBLISH", "redisync-test:replication-probe", "1"});
        const Reply acked = master.command({"WAIT", std::to_string(replicas), "200"});
        return acked.kind == Reply::Kind::integer && acked.integer >= replicas;
      },
      limit, std::chrono::milliseconds(50));
}

}  // namespace redisync::test
