// SPDX-License-Identifier: Apache-2.0
#include "sync/rate_limiter/rate_limiter_plan.h"

#include <algorithm>

#include "net/executor.h"
#include "redisync/errors.h"
#include "redisync/rate_limiter.h"
#include "sync/identity.h"

namespace redisync::sync {

std::string rate_key(const std::string& name, const std::string& suffix) {
  return hash_tag(name) + ":" + suffix;
}

std::vector<std::string> rate_keys(const std::string& name, const std::string& client_id) {
  const std::string value = rate_key(name, "value");
  const std::string permits = rate_key(name, "permits");
  return {name, value, value + ":" + client_id, permits, permits + ":" + client_id};
}

void check_rate_config(std::int64_t rate, Duration interval, Duration keep_alive,
                       const std::string& what) {
  const auto max_ms = std::to_string(RateLimiter::kMaxDuration.count());
  if (rate < 1 || rate > RateLimiter::kMaxRate) {
    throw InvalidArgument("redisync: rate of " + what + " must be in [1, " +
                          std::to_string(RateLimiter::kMaxRate) + "] (got " +
                          std::to_string(rate) + ")");
  }
  if (interval < Duration{1} || interval > RateLimiter::kMaxDuration) {
    throw InvalidArgument("redisync: interval of " + what + " must be in [1, " + max_ms +
                          "] ms (got " + std::to_string(interval.count()) + " ms)");
  }
  if (keep_alive < Duration{0} || keep_alive > RateLimiter::kMaxDuration) {
    throw InvalidArgument("redisync: keep-alive of " + what + " must be in [0, " + max_ms +
                          "] ms, 0 meaning none (got " + std::to_string(keep_alive.count()) +
                          " ms)");
  }
}

std::optional<Duration> rate_sleep(long long delay_ms, std::optional<Duration> remaining) {
  const Duration delay{std::max<long long>(delay_ms, 1)};
  if (!remaining) return std::min<Duration>(delay, std::chrono::hours(1));
  if (*remaining <= Duration{0} || delay > *remaining) return std::nullopt;
  return delay;
}

std::exception_ptr rate_reply_error(const Reply& reply, const std::string& what,
                                    std::int64_t permits) {
  const std::string& text = reply.str;
  if (text.rfind("RATE_LIMITER_NOT_INITIALIZED", 0) == 0) {
    return std::make_exception_ptr(NotConfiguredError(
        "redisync: " + what + " has no rate set: call try_set_rate() or set_rate() first "
        "(it may also have been removed, or its keep-alive ran out)"));
  }
  const std::string exceed = "RATE_LIMITER_PERMITS_EXCEED_RATE ";
  if (text.rfind(exceed, 0) == 0) {
    const std::string rate = text.substr(exceed.size(), text.find(' ', exceed.size()) -
                                                            exceed.size());
    return std::make_exception_ptr(InvalidArgument(
        "redisync: permits (" + std::to_string(permits) + ") exceed the rate (" + rate +
        ") of " + what + ": they could never be granted"));
  }
  return net::server_error(reply, "redisync: " + what);  // NOAUTH: AuthError, as everywhere
}

std::exception_ptr rate_ambiguous_error(std::exception_ptr error, const std::string& what) {
  const std::string taken =
      "; the permit may have been taken (the attempt may have run, or may still run, on the "
      "server): count it as used";
  try {
    std::rethrow_exception(error);
  } catch (const TimeoutError& e) {
    return std::make_exception_ptr(
        TimeoutError("redisync: acquiring " + what + ": no reply in time" + taken + " (" +
                     e.what() + ")"));
  } catch (const ConnectionError& e) {
    if (!e.maybe_sent()) return error;
    return std::make_exception_ptr(ConnectionError(
        "redisync: acquiring " + what + ": the connection dropped after the attempt was sent" +
            taken + " (" + e.what() + ")",
        e.value(), true));
  } catch (...) {
  }
  return error;
}

}  // namespace redisync::sync
