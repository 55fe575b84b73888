// SPDX-License-Identifier: Apache-2.0
// Which kind the keys under a name prove (docs/wire-format.md), for `status` and `ls`: one
// rule for both. A kind is claimed only when its layout proves it; keys several kinds lay out
// alike give every candidate (kinds.h: KindVerdict, "ambiguous"):
//   - a hash of owner fields and nothing else: a lock, or a fair-lock nobody waits for (the
//     queue is deleted when it empties); a spin-lock and the non-reentrant variants are
//     written exactly as those two;
//   - an integer string and nothing else: a semaphore, a permit-expirable-semaphore with no
//     permit out, a count-down-latch, or anybody's number (`SET n 5`).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kinds.h"
#include "redisync/client.h"

namespace redisync::cli {

/// The keys a kind can be told by: the name's own and its companions'.
struct LayoutFacts {
  std::string type;                                         ///< Redis TYPE of the name
  std::vector<std::pair<std::string, std::string>> fields;  ///< hash: its fields and values
  std::optional<std::string> value;                         ///< string: its value
  bool fair_queue = false;       ///< redisson_lock_queue:TAG list or redisson_lock_timeout:TAG zset
  bool fence_counter = false;    ///< redisson_lock_token:TAG string
  bool permit_timeouts = false;  ///< TAG:timeout sorted set
};

/// Reads the facts of `name` (TYPE, HGETALL or GET, the companions' TYPEs). Read-only.
LayoutFacts read_layout(Client& client, const std::string& name);

/// What the facts prove. No candidates: nothing stored (type none, no queue) or no kind's
/// layout (a user's hash, text, a list...).
KindVerdict kind_of_layout(const LayoutFacts& facts);

/// True when the facts fit an integer anybody could have written (an ambiguous count).
bool may_be_plain_data(const LayoutFacts& facts);

}  // namespace redisync::cli
