// SPDX-License-Identifier: Apache-2.0
// Pure helpers of the rate limiter (docs/wire-format.md §17): its key names, input checks, what a refused
// attempt does next, and how the scripts' error replies read. No I/O; unit-tested.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "redisync/config.h"
#include "redisync/reply.h"

namespace redisync::sync {

/// Redisson's suffix rule S(N, x): "N:x" when N contains '{', else "{N}:x".
std::string rate_key(const std::string& name, const std::string& suffix);
/// The keys every rate limiter script takes, in the order of rate_limiter_window.lua: the hash,
/// the overall and per-client value keys, the overall and per-client permits keys.
std::vector<std::string> rate_keys(const std::string& name, const std::string& client_id);

/// Throws InvalidArgument naming `what` (e.g. "rate limiter 'x' on ...") unless
/// 1 <= rate <= kMaxRate, 1 ms <= interval <= max_duration and 0 <= keep_alive <= max_duration.
void check_rate_config(std::int64_t rate, Duration interval, Duration keep_alive,
                       const std::string& what);

/// After a refused attempt that answered `delay_ms` (ms until the oldest grant leaves the
/// window): how long to sleep before the next attempt, or nullopt to give up because the
/// permit cannot free up before the deadline. `remaining` = time left (nullopt: no limit).
/// Sleeps without a deadline are capped at an hour (the attempt after it sleeps again).
std::optional<Duration> rate_sleep(long long delay_ms, std::optional<Duration> remaining);

/// The exception for an error reply of a rate limiter script: NotConfiguredError,
/// InvalidArgument (permits above the rate), or what net::server_error makes of any other
/// reply (AuthError for NOAUTH / WRONGPASS, else ServerError), each naming `what`.
std::exception_ptr rate_reply_error(const Reply& reply, const std::string& what,
                                    std::int64_t permits);

/// The error for an acquire attempt whose reply was lost after it was sent (`error`: a
/// TimeoutError, or a ConnectionError with maybe_sent()): the script may have granted the
/// permit, or may still run, so the message says the permit may have been taken (same class,
/// naming `what`). Any other error is returned as it is.
std::exception_ptr rate_ambiguous_error(std::exception_ptr error, const std::string& what);

}  // namespace redisync::sync
