// SPDX-License-Identifier: Apache-2.0
// Which kind of lock a name holds, read from its keys (docs/wire-format.md §2, §4, §5, §10, §11), for
// `redisync unlock --force` (release it with its own kind's force-unlock) and `redisync ls`.
#pragma once

#include <string>

#include "redisync/client.h"

namespace redisync::cli {

enum class LockFamily {
  none,        ///< nothing under the name (and no fair-lock queue)
  lock,        ///< hash of owner fields: Lock, or SpinLock (same layout)
  fair,        ///< as lock, with a fair-lock queue / timeout set (the hash may be absent)
  fenced,      ///< as lock, with a fencing-token counter
  read_write,  ///< hash with a `mode` field
  not_a_lock,  ///< something else: a semaphore's count, a latch, a user's list...
};

struct LockProbe {
  LockFamily family = LockFamily::none;
  std::string type;         ///< Redis TYPE of the name
  std::string mode;         ///< read_write: "read" or "write"
  std::string description;  ///< not_a_lock: what it is, for the error message
};

/// Reads TYPE and the fields of `name` and the names derived from it. A hash counts as a lock
/// only when every field is an owner field ("<client id>:<thread id>" -> hold count >= 1).
LockProbe probe_lock(Client& client, const std::string& name);

/// True for "<something>:<integer>" (an owner field of docs/wire-format.md §1.2).
bool is_owner_field(const std::string& field);

}  // namespace redisync::cli
