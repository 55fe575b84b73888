// Owner identity (wire spec §1.2): a random UUID per Client, a process-unique id per thread,
// and random request ids for release records.
#pragma once

#include <cstdint>
#include <string>

namespace redisync::sync {

/// A random (version 4) UUID in canonical lowercase form, 36 chars.
std::string random_uuid();
/// 32 lowercase hex chars from 16 random bytes (release request id, spec §1.8).
std::string random_request_id();
/// The calling thread's id: assigned on first use from a process-wide counter.
std::int64_t thread_owner_id();
/// A fresh id from the same counter, for async owners.
std::int64_t next_owner_id();
/// TAG(N) of spec §1.1: "{N}" unless N already contains '{'.
std::string hash_tag(const std::string& name);

}  // namespace redisync::sync
