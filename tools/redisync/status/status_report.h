// SPDX-License-Identifier: Apache-2.0
// What `redisync status NAME` found under a name, and its two renderings (aligned text, JSON).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kinds.h"

namespace redisync::cli {

/// An owner field of a lock hash and its hold count.
struct Holder {
  std::string owner;  ///< "<client uuid>:<thread id>" (writers: ":write" appended)
  long long count = 0;
};

/// A fair-lock waiter: its owner field and the deadline (epoch ms) by which it must retry.
struct Waiter {
  std::string owner;
  std::optional<long long> deadline_ms;
  std::optional<long long> remaining_ms;  ///< deadline minus our clock now
};

/// An acquired permit of a permit-expirable semaphore.
struct Permit {
  std::string id;                         ///< 32 hex chars (16 raw bytes on the wire)
  std::optional<long long> remaining_ms;  ///< nullopt: no expiry; <= 0: expired, not reclaimed
};

/// One window of a rate limiter (the overall one, or one client's).
struct RateWindow {
  std::string client;       ///< the client id of a per-client window; empty for overall
  long long available = 0;  ///< permits the next acquire could take
  long long granted = 0;    ///< permits granted in the current interval
  long long grants = 0;     ///< acquisitions behind them
};

/// A rate limiter's configuration and windows (kind rate-limiter).
struct RateLimiterStatus {
  long long rate = 0;
  long long interval_ms = 0;
  std::string type;  ///< "overall" or "per-client"
  long long keep_alive_ms = 0;
  std::vector<RateWindow> windows;
};

struct StatusReport {
  std::string name;
  std::string type;   ///< Redis TYPE: none, hash, string, ...
  /// What the keys prove (kinds.h); no candidates: kNoKind when nothing is stored under the
  /// name (type none), kOtherData otherwise.
  KindVerdict kind;
  bool may_be_data = false;  ///< an ambiguous count: anybody's number looks the same
  std::string state;  ///< free, held, read-locked, write-locked, open / limited (rate limiter)
  std::optional<long long> pttl_ms;  ///< remaining lease (PTTL; -1 = no expiry)

  std::vector<Holder> holders;  ///< the lock kinds but read-write-lock
  std::string mode;             ///< read-write-lock: "read" or "write"
  std::vector<Holder> writers;
  std::vector<Holder> readers;

  std::optional<std::string> value;      ///< string keys: the raw value
  std::optional<long long> permits;      ///< string keys holding an integer
  std::vector<Permit> acquired_permits;  ///< permit-expirable semaphore

  std::vector<Waiter> queue;               ///< fair-lock queue (lock kinds and none)
  std::optional<std::string> fence_token;  ///< fenced-lock counter, if present
  bool lock_family = false;                ///< queue / fence token apply

  /// kind.label() with kNoKind or kOtherData for no candidates.
  std::string kind_label() const { return kind.label(type == "none" ? kNoKind : kOtherData); }

  std::optional<RateLimiterStatus> rate_limiter;  ///< kind rate-limiter
};

/// "key: value" lines, values aligned in one column.
std::string render_text(const StatusReport& report);
/// One JSON object (no trailing newline).
std::string render_json(const StatusReport& report);

}  // namespace redisync::cli
