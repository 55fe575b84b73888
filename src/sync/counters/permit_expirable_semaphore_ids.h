// SPDX-License-Identifier: Apache-2.0
// Pure helpers of the permit-expirable semaphore (docs/wire-format.md §8): permit ids (16 raw bytes on
// the wire, 32 lowercase hex chars for users), deadline scores, and the acquire step's reply.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "redisync/reply.h"
#include "sync/acquire/acquire_loop.h"

namespace redisync::sync {

/// Score of a permit without expiry (Redisson's constant; NO_EXPIRY in the scripts' prelude
/// permit_expirable_semaphore_common.lua).
inline constexpr long long kNoExpiryScore = 922337203685477LL;
/// Bytes in a permit id.
inline constexpr std::size_t kPermitIdBytes = 16;

/// Lowercase hex of `raw` (32 chars for a 16-byte id).
std::string permit_id_to_hex(std::string_view raw);
/// The 16 raw bytes of a 32-hex-digit id (either case). Throws InvalidArgument, naming the
/// id, the semaphore `name` and what is wrong, for any other text.
std::string permit_id_from_hex(std::string_view hex, const std::string& name);
/// 16 random bytes (a fresh permit id).
std::string random_permit_id();

/// Interprets the acquire step's reply: "OK" = acquired; ":<ms>" = not acquired, wait at
/// most that long, until the earliest permit expires (the script counts it on the server's
/// clock; at least 1 ms); nil = not acquired, wait for a message (ttl -1). Anything else:
/// ttl -1 as well.
AttemptResult decode_acquire_reply(const Reply& reply);

}  // namespace redisync::sync
