// SPDX-License-Identifier: Apache-2.0
// Owner identity (docs/wire-format.md §1.2): a random UUID per Client, a process-unique id per thread,
// and random request ids for release records.
#pragma once

#include <cstdint>
#include <string>

namespace redisync::sync {

/// A random (version 4) UUID in canonical lowercase form, 36 chars.
std::string random_uuid();
/// 32 lowercase hex chars from 16 random bytes (release request id, docs/wire-format.md §1.8).
std::string random_request_id();
/// The calling thread's id: assigned on first use from a process-wide counter.
std::int64_t thread_owner_id();
/// A fresh id from the same counter, for async owners.
std::int64_t next_owner_id();
/// TAG(N) of docs/wire-format.md §1.1: "{N}" unless N already contains '{'.
std::string hash_tag(const std::string& name);
/// True when every key and channel built from `name` with TAG (N itself, P:TAG(N), TAG(N):S)
/// hashes to one cluster slot: a name without '{' must not contain '}' (TAG would make its
/// prefix up to that '}' the hash tag), and a name with '{' needs a non-empty hash tag of its
/// own ("{x}"; else N is hashed whole and P:N differs). Pure, for unit tests.
bool one_slot_name(const std::string& name);
/// Throws InvalidArgument, before anything is written, if `cluster` and not one_slot_name():
/// in a cluster such a lock would be taken and then never released (CROSSSLOT). `noun`:
/// "lock", "fair lock"... Redisson builds the same keys (and has the same problem) for such
/// names, so they are refused rather than laid out differently.
/// `always_braced`: the kind also builds a key or channel with "{N}" whatever N holds (the
/// count-down latch's channel, docs/wire-format.md §9): then N must contain no brace at all.
void check_cluster_name(bool cluster, const std::string& name, const std::string& noun,
                        bool always_braced = false);

}  // namespace redisync::sync
