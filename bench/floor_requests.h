// SPDX-License-Identifier: Apache-2.0
// The two requests of an uncontended redisync Lock pair (lock(lease) + unlock(), default
// Config: wake handoff, starvation guard on, not a cluster), built the way the library builds
// them, for bench/blocking_floor.cpp. The script texts are the library's own embedded scripts,
// behind the same publish guard (lua/publish_guard.h), so they are the bytes the library
// sends; the floor also checks their SHA-1s against the server's script cache
// after a library pair. The keys and arguments mirror src/sync/locks/lock.cpp (acquire) and
// release_flow.cpp (hash_release_step); docs/wire-format.md §2.2/§2.3 describe them.
#pragma once

#include <string>
#include <vector>

#include "lua/scripts.h"
#include "lua/publish_guard.h"
#include "sync/identity.h"

namespace bench {

/// lock_acquire.lua behind publish_check.lua and publish_guard.lua (detail::publish_guarded,
/// wake mode).
inline const redisync::lua::Script& floor_acquire_script() {
  return redisync::lua::with_publish_guard(redisync::lua::lock_acquire, false);
}

/// lock_release.lua (publish_check.lua and release_record.lua in front).
inline const redisync::lua::Script& floor_release_script() { return redisync::lua::lock_release; }

/// One owner's requests on one lock name.
struct FloorRequests {
  FloorRequests(const std::string& lock_name, long long lease_ms)
      : name(lock_name),
        channel("redisson_lock__channel:" + redisync::sync::hash_tag(lock_name)),
        // "<client id>:<thread id>" (docs/wire-format.md §1.2): a UUID, then a small counter.
        field(redisync::sync::random_uuid() + ":1"),
        lease(std::to_string(lease_ms)) {}

  /// KEYS: lock, starvation guard. ARGV: lease, owner, "not claiming", the claim's expiry
  /// (5 x the default 20 ms guard, at least 100 ms), then publish_guard's command and channel.
  std::vector<std::string> acquire() const {
    return {"EVALSHA", acquire_sha, "2", name,
            "redisync_lock_guard:" + redisync::sync::hash_tag(name),
            lease, field, "0", "100", "PUBLISH", channel};
  }

  /// KEYS: lock, channel, this release's record. ARGV: message "0", lease, owner, the record's
  /// expiry (3 default watchdog leases: lock_release_record_ttl_ms), command, "publish".
  std::vector<std::string> release(const std::string& record) const {
    return {"EVALSHA", release_sha, "3", name, channel, record,
            "0", lease, field, "90000", "PUBLISH", "1"};
  }

  /// A fresh release record key (release_record_key(): a random request id per release).
  std::string next_record() const {
    return "redisson_unlock_latch:" + redisync::sync::hash_tag(name) + ":" +
           redisync::sync::random_request_id();
  }

  std::string name, channel, field, lease;
  std::string acquire_sha, release_sha;  // set after SCRIPT LOAD
};

}  // namespace bench
