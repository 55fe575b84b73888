// SPDX-License-Identifier: Apache-2.0
// Config::validate and Config::describe, and parse_duration (URL parsing: config_url.cpp).
#include "redisync/config.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "config_parse.h"
#include "redisync/errors.h"

namespace redisync {

using namespace config_parse;

void config_parse::fail(const std::string& message) {
  throw ConfigError("redisync config: " + message);
}

std::string config_parse::ms_text(Duration d) { return std::to_string(d.count()) + " ms"; }

namespace {

std::string endpoint_text(const std::string& host, std::uint16_t port) {
  const bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// Durations redisync stores in Redis or sets timers for stay within max_duration (the
// longest lease Redis can keep; see config.h).
void check_at_most_max(Duration value, const char* field) {
  if (value > max_duration) {
    fail(std::string(field) + " must be <= " + std::to_string(max_duration.count()) +
         " ms (redisync::max_duration; got " + ms_text(value) + ")");
  }
}

void check_positive(Duration value, const char* field) {
  if (value <= Duration::zero()) {
    fail(std::string(field) + " must be > 0 (got " + ms_text(value) + ")");
  }
  check_at_most_max(value, field);
}

void check_non_negative(Duration value, const char* field) {
  check_at_most_max(value, field);
  if (value < Duration::zero()) {
    fail(std::string(field) + " must be >= 0 (got " + ms_text(value) + ")");
  }
}

}  // namespace

void Config::validate() const {
  switch (topology) {
    case Topology::single:
      if (unix_socket.empty()) {
        if (host.empty()) fail("host must not be empty");
        if (port == 0) fail("port must be in 1..65535 (got 0)");
      }
      break;
    case Topology::sentinel:
      if (seeds.empty()) fail("seeds must list at least one sentinel (sentinel topology)");
      if (sentinel_master.empty()) fail("sentinel_master must be set (sentinel topology)");
      break;
    case Topology::cluster:
      if (seeds.empty()) fail("seeds must list at least one node (cluster topology)");
      break;
  }
  if (topology != Topology::single && !unix_socket.empty()) {
    fail("unix_socket is only supported by the single topology");
  }
  for (const Endpoint& seed : seeds) {
    if (seed.host.empty()) fail("seeds: a host is empty");
    if (seed.port == 0) fail("seeds: port of " + seed.host + " must be in 1..65535 (got 0)");
  }
  if (database < 0) fail("database must be >= 0 (got " + std::to_string(database) + ")");
  if (topology == Topology::cluster && database != 0) {
    fail("database must be 0 for the cluster topology (got " + std::to_string(database) + ")");
  }
  // Redis refuses CLIENT SETNAME with spaces or non-printable characters; fail here instead of
  // on every connect.
  for (char c : client_name) {
    if (c < '!' || c > '~') {
      fail("client_name must not contain spaces, newlines or non-printable characters");
    }
  }
  if (!tls_options.cert_file.empty() && tls_options.key_file.empty()) {
    fail("tls_options.key_file must be set when tls_options.cert_file is");
  }
  if (tls_options.cert_file.empty() && !tls_options.key_file.empty()) {
    fail("tls_options.cert_file must be set when tls_options.key_file is");
  }

  check_positive(connect_timeout, "connect_timeout");
  check_positive(timeout, "timeout");
  if (retry_attempts < 0 || retry_attempts > max_retry_attempts) {
    fail("retry_attempts must be in 0.." + std::to_string(max_retry_attempts) + " (got " +
         std::to_string(retry_attempts) + ")");
  }
  check_non_negative(retry_interval, "retry_interval");
  check_positive(reconnection_delay_min, "reconnection_delay_min");
  if (reconnection_delay_min > reconnection_delay_max) {
    fail("reconnection_delay_min must be <= reconnection_delay_max (got " +
         ms_text(reconnection_delay_min) + " > " + ms_text(reconnection_delay_max) + ")");
  }
  check_positive(subscription_timeout, "subscription_timeout");

  // Only > 0 is required; the watchdog renews every third of this, so very small values
  // mean very frequent renewal traffic.
  check_positive(lock_watchdog_timeout, "lock_watchdog_timeout");
  if (renewal_batch_size < 1 || renewal_batch_size > 10000) {
    fail("renewal_batch_size must be in 1..10000 (got " + std::to_string(renewal_batch_size) + ")");
  }
  check_positive(fair_lock_wait_timeout, "fair_lock_wait_timeout");
  check_non_negative(subscription_linger, "subscription_linger");
  if (busy_poll < std::chrono::microseconds::zero() || busy_poll > std::chrono::seconds(1)) {
    fail("busy_poll must be in 0..1s (got " + std::to_string(busy_poll.count()) + " us)");
  }
  check_non_negative(slaves_sync_timeout, "slaves_sync_timeout");
  check_non_negative(starvation_guard, "starvation_guard");
  if (grant_lease < Duration{100} || grant_lease > Duration{60000}) {
    fail("grant_lease must be in 100ms..60s (got " + ms_text(grant_lease) + ")");
  }
  check_positive(reconnection_delay_max, "reconnection_delay_max");
  // A release record lives (timeout + retry_interval) * retry_attempts (docs/wire-format.md §1.8).
  const double record_ms = (static_cast<double>(timeout.count()) + retry_interval.count()) *
                           std::max(retry_attempts, 1);
  if (record_ms > static_cast<double>(max_duration.count())) {
    fail("(timeout + retry_interval) * retry_attempts must be <= " +
         std::to_string(max_duration.count()) + " ms (the release record's lifetime)");
  }

}

std::string Config::describe() const {
  std::string out;
  switch (topology) {
    case Topology::single:
      if (!unix_socket.empty()) {
        out = "unix:" + unix_socket;
      } else {
        out = (tls ? "rediss://" : "") + endpoint_text(host, port);
      }
      break;
    case Topology::sentinel:
    case Topology::cluster:
      out = topology == Topology::sentinel ? "sentinel " + sentinel_master + "@" : "cluster ";
      for (std::size_t i = 0; i < seeds.size(); ++i) {
        if (i > 0) out += ',';
        out += endpoint_text(seeds[i].host, seeds[i].port);
      }
      break;
  }
  if (database != 0) out += " db " + std::to_string(database);
  // A single TCP server already shows TLS in its "rediss://" prefix.
  if (tls && (topology != Topology::single || !unix_socket.empty())) out += " (tls)";
  return out;
}

Duration parse_duration(const std::string& text, const std::string& what) {
  const auto bad = [&](const std::string& why) -> Duration {
    fail("invalid duration for " + what + ": '" + text + "' " + why);
  };
  std::size_t digits = 0;
  while (digits < text.size() && is_digit(text[digits])) ++digits;
  if (digits == 0) {
    return bad("(expected a non-negative integer of milliseconds, or one with a unit: " +
               std::string("250ms, 3s, 1m, 1h)"));
  }
  std::uint64_t value = 0;
  if (!parse_int(std::string_view(text).substr(0, digits), value)) return bad("(too large)");

  const std::string_view unit = std::string_view(text).substr(digits);
  std::uint64_t factor = 0;
  if (unit.empty() || unit == "ms") {
    factor = 1;
  } else if (unit == "s") {
    factor = 1000;
  } else if (unit == "m") {
    factor = 60'000;
  } else if (unit == "h") {
    factor = 3'600'000;
  } else {
    return bad("(unknown unit '" + std::string(unit) + "'; use ms, s, m or h)");
  }
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<Duration::rep>::max());
  if (value > kMax / factor) return bad("(too large)");
  return Duration(static_cast<Duration::rep>(value * factor));
}

}  // namespace redisync
