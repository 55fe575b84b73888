// SPDX-License-Identifier: Apache-2.0
// Client configuration: a plain struct with written defaults, or a URL.
//
// Field names follow Redisson's options (camelCase there, snake_case here) so that settings
// carry over between a Java and a C++ service sharing the same locks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "redisync/export.h"

namespace redisync {

class Metrics;  // redisync/metrics.h

using Duration = std::chrono::milliseconds;

/// The longest duration redisync accepts for what it stores in Redis or sets a timer for:
/// 10^12 ms (about 31.7 years). A longer lease or TTL is refused with InvalidArgument (a
/// longer Config duration with ConfigError) before anything is written; a longer wait means
/// "no limit". (Redis refuses expiries past the end of its millisecond clock, and a lease it
/// refused after the lock hash was written would leave a lock that never expires.)
inline constexpr Duration max_duration{1'000'000'000'000};

/// The most resends Config::retry_attempts may ask for; more is refused with ConfigError. A
/// request still failing after this many (each up to `timeout`, `retry_interval` apart) is
/// reported: with the defaults that is 7.5 minutes of outage. Redisson's default is 3 (the
/// Java int has no bound); an unbounded count made a failing request resend for years.
inline constexpr int max_retry_attempts = 100;

namespace detail {
/// A wait of any unit in milliseconds, never overflowing: <= 0 -> 0 (one attempt), longer
/// than max_duration -> Duration{-1} (no limit), otherwise rounded up.
template <class Rep, class Period>
Duration to_wait_ms(const std::chrono::duration<Rep, Period>& d) {
  if (d <= d.zero()) return Duration{0};
  // Compared as floating point: converting hours::max() to milliseconds would overflow.
  if (std::chrono::duration<double, std::milli>(d).count() >
      static_cast<double>(max_duration.count())) {
    return Duration{-1};
  }
  return std::chrono::ceil<Duration>(d);
}
/// An explicit Duration wait as the flows take it: < 0 -> 0, > max_duration -> -1 (no limit).
inline Duration clamp_wait(Duration d) {
  if (d < Duration{0}) return Duration{0};
  return d > max_duration ? Duration{-1} : d;
}
}  // namespace detail

/// TLS settings, used when Config::tls is true (URL scheme "rediss://").
struct REDISYNC_API TlsConfig {
  std::string ca_file;     ///< PEM CA bundle to verify the server; empty = system default paths
  std::string cert_file;   ///< client certificate (PEM) for mutual TLS; empty = none
  std::string key_file;    ///< client private key (PEM); required when cert_file is set
  bool verify_peer = true; ///< verify the server certificate chain
  std::string server_name; ///< SNI / hostname check; empty = Config::host
};

/// How the Client reaches Redis.
enum class Topology {
  single,    ///< one server (host:port or unix socket)
  sentinel,  ///< servers are sentinels; the master named Config::sentinel_master is used
  cluster,   ///< servers are cluster seed nodes
};

/// How a release hands a lock to the next waiter (docs/wire-format.md "Direct handoff").
enum class Handoff {
  wake,   ///< Redisson's protocol: the release wakes waiters, who then ask again
  grant,  ///< redisync only: the release gives the lock to a registered redisync waiter
};

/// One host:port pair, for sentinel and cluster seed lists.
struct REDISYNC_API Endpoint {
  std::string host;
  std::uint16_t port = 6379;
};

/// Everything a Client needs to know. Defaults are Redisson's where Redisson has the option.
struct REDISYNC_API Config {
  // --- where ---
  Topology topology = Topology::single;
  std::string host = "127.0.0.1";  ///< server host (single topology)
  std::uint16_t port = 6379;       ///< server port (single topology)
  std::string unix_socket;         ///< if set, connect to this unix socket instead of host:port
  std::vector<Endpoint> seeds;     ///< sentinel or cluster nodes (sentinel/cluster topology)
  std::string sentinel_master;     ///< master name (sentinel topology)
  std::string sentinel_username;   ///< ACL user for the sentinels (Redisson: sentinelUsername)
  std::string sentinel_password;   ///< AUTH password for the sentinels (sentinelPassword)
  int database = 0;                ///< SELECT after connect (Redisson: database), 0..; one the
                                   ///< server lacks fails calls with ConfigError
  std::string username;            ///< ACL user; empty = "default" (password-only AUTH)
  std::string password;            ///< AUTH password; empty = no AUTH unless a username is set
  std::string client_name;         ///< CLIENT SETNAME after connect; empty = none
  bool tls = false;                ///< TLS on the connection ("rediss://")
  TlsConfig tls_options;

  // --- timing (Redisson names in comments) ---
  Duration connect_timeout{10000};            ///< connectTimeout: TCP+TLS+AUTH handshake
  /// timeout: wait for one command's reply. The wait counts from when the request was written
  /// or, if later, from when the server last sent anything on its connection: a request
  /// behind a long pipeline the server is still answering is not timed out.
  Duration timeout{3000};
  int retry_attempts = 3;                     ///< retryAttempts: resends after a connection
                                              ///< error, 0..max_retry_attempts (100)
  Duration retry_interval{1500};              ///< retryInterval: pause between those resends
  Duration reconnection_delay_min{50};        ///< first pause before reconnecting
  Duration reconnection_delay_max{2000};      ///< backoff cap between reconnect attempts
  Duration subscription_timeout{7500};        ///< subscriptionTimeout: wait for SUBSCRIBE ack
  /// While a thread is blocked in a call (lock(), unlock(), ...), whichever thread runs the
  /// Client's loop (that caller itself, or the I/O thread) polls for replies for up to this
  /// long after each event instead of sleeping, which saves the wake-up of an idle CPU per
  /// round trip (~20-30 us on virtual machines), yielding to any other runnable thread while
  /// polling. Also how long the I/O thread leaves the loop to a caller it just served, so the
  /// caller's next call runs the loop itself with no thread switch, and how long a caller
  /// served by the I/O thread waits before it asks for the loop (a wait for a held lock then
  /// gets its wake-up on its own thread). 0 turns all three off (lowest CPU use; a blocked
  /// call then runs the loop only when it finds nobody running it).
  std::chrono::microseconds busy_poll{200};

  // --- locks ---
  Duration lock_watchdog_timeout{30000};      ///< lockWatchdogTimeout: lease when none is given;
                                              ///< renewed every third of it while held
  int renewal_batch_size = 100;               ///< locks renewed per script call (per server)
  /// Fair-lock wait allowance A (docs/wire-format.md §4): how long a queued waiter that stops
  /// polling (killed, stopped, cut off) keeps its place at the head of the queue, and so the
  /// lock from everyone behind it. redisync waiters poll at least every third of it (and every
  /// second) and refresh their deadlines as they do, so live ones keep their places. Redisson
  /// uses the caller's wait, else its threadWaitTime (5 min; 5 s before 3.14).
  Duration fair_lock_wait_timeout{5000};
  Duration subscription_linger{1000};         ///< keep a channel subscribed this long after its
                                              ///< last local waiter leaves (saves resubscribes)
  /// Lock, FencedLock, NonReentrantLock and the write side of ReadWriteLock are unfair: a
  /// waiter can lose the race for a
  /// freed lock many times in a row. One that has waited this long claims the next turn, and
  /// other redisync clients leave the free lock to it (a short-lived key beside the lock;
  /// Redisson clients ignore it). Not used in grant mode (waiters are granted in turn).
  /// 0 turns the guard off (Redisson's plain behaviour, one key read less per acquire).
  /// Not used in a cluster (the acquire would become a multi-key script, which Redis
  /// refuses while the lock's slot migrates).
  Duration starvation_guard{20};
  /// `wake` (default): Redisson's protocol, unchanged. `grant`: waiters of Lock, FencedLock,
  /// FairLock, NonReentrantLock, NonReentrantFairLock and the write side of ReadWriteLock
  /// register beside the lock, and a release by a client in grant mode gives the lock to a
  /// registered waiter inside the release script (the fair kinds: to the queue head only;
  /// ReadWriteLock: a waiting writer, when a write release or the last reader's release frees
  /// the lock; readers are never granted: a waiting reader makes the next freeing release
  /// wake the waiters, and writers leave the free lock to the readers, so read and write
  /// turns alternate; a waiting reader attempts every third of the grant lease); the
  /// waiter's lock() returns when it hears of it,
  /// with no round trip of its own. Java (Redisson) waiters are never granted; an unfair Lock
  /// or a ReadWriteLock then favours registered redisync waiters over them. See
  /// docs/wire-format.md "Direct handoff".
  Handoff handoff = Handoff::wake;
  /// The lease a grant by this client's releases starts with, until the granted waiter's
  /// client extends it to the normal lease: a grant to a waiter that died or left frees the
  /// lock within it. It travels with the grant (the grantee counts the releaser's grant
  /// lease, not its own). In grant handoff this client's pub/sub connections PING every tenth
  /// of it, which dates grant messages (a grant is taken on its message only while enough of
  /// its lease is known to be left); a waiting acquisition refreshes its registration every
  /// third of the 10 s registration period. 100 ms..60 s.
  Duration grant_lease{2000};
  bool check_lock_synced_slaves = true;       ///< checkLockSyncedSlaves: WAIT for a replica ack
  Duration slaves_sync_timeout{1000};         ///< slavesSyncTimeout: the WAIT timeout

  // --- observability ---
  /// Where the Client reports acquire waits, hold times, renewals... (redisync/metrics.h);
  /// null = no metrics (the default; costs one null check per event). Not set by from_url.
  std::shared_ptr<Metrics> metrics;
  /// Where the library's diagnostic lines go: an unlock() that did not succeed (not held, or
  /// a release the server could not answer), a lost lock when no Client::on_lock_lost handler
  /// is set, a channel it could not subscribe to, a malformed Sentinel message, a MultiLock's
  /// failed unlock() (its first member's Client's). Each call gets one line, without the
  /// "redisync: " prefix or a newline. Empty (the default): the line goes to stderr as
  /// "redisync: <line>". Runs on whichever thread noticed, often the I/O thread: it must not
  /// block; what it throws is ignored. Not set by from_url. Also gets redisync::Guard's failed
  /// releases, and the exceptions of async handlers run on this Client's I/O thread unless
  /// set_async_handler_exception_hook took them.
  std::function<void(std::string_view line)> log;

  /// Parses a URL into a Config with defaults for everything the URL does not say.
  ///   redis://[[user]:password@]host[:port][/db][?option=value&...]
  ///   rediss://...                       TLS (same form)
  ///   unix:///path/to/redis.sock[?db=N&password=...&user=...]
  ///   redis-sentinel://[[user]:password@]h1:26379,h2:26379/master_name[/db]
  ///   redis-cluster://[[user]:password@]h1:7000,h2:7001
  /// Query options: timeout, connect_timeout, retry_attempts, retry_interval, client_name,
  /// lock_watchdog_timeout, subscription_linger, busy_poll (e.g. 200us, 0 = off), starvation_guard,
  /// handoff (wake or grant), grant_lease, sentinel_user, sentinel_password, verify_peer (0/1), ca_file, cert_file, key_file,
  /// db, user, password. Durations are integer milliseconds or take a unit: 250ms, 3s, 1m.
  /// User and password are percent-decoded.
  /// Throws ConfigError naming the offending part.
  static Config from_url(const std::string& url);

  /// Checks every field; throws ConfigError naming the first invalid field.
  void validate() const;

  /// A printable description of where this Config points ("127.0.0.1:6379", "unix:/tmp/r.sock"),
  /// without secrets; used in error messages.
  std::string describe() const;
};

/// Parses "250ms", "30s", "5m", "1h", "1500" (ms) into milliseconds. Throws ConfigError naming
/// `what` when the text is not a non-negative duration.
REDISYNC_API Duration parse_duration(const std::string& text, const std::string& what);

}  // namespace redisync
