// SPDX-License-Identifier: Apache-2.0
// Counts read back from Redis (semaphore permits, latch counts): parsed strictly, the whole
// value an integer ("12abc" and "1e3" are not counts), shared by every primitive that reads one.
#pragma once

#include <cstdint>
#include <exception>
#include <string>

#include "net/reply.h"

namespace redisync::sync {

/// The count from a GET-like reply (nil = absent = 0). An error reply, or a value that is not
/// a whole decimal integer, sets `error` (ServerError naming `what` and the value) and returns
/// 0. Never throws, so the I/O thread can hand errors over without a catch block.
std::int64_t parse_count(const net::Reply& reply, const std::string& what,
                         std::exception_ptr& error);

/// As above, throwing the error.
std::int64_t parse_count(const net::Reply& reply, const std::string& what);

}  // namespace redisync::sync
