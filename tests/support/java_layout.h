// SPDX-License-Identifier: Apache-2.0
// A "Java side" for interoperability tests: a client that acts on the server exactly as the
// Redisson layout of /work/shared/spec/wire-format.md describes Redisson acting (keys, owner
// fields, channels, messages, expiry), written from that prose, with no redisync code. Each
// step runs as one EVAL over the fixture's admin connection (RedisServer::command), so it is
// atomic like Redisson's own steps. Plus ChannelListener: a raw subscriber connection that
// waits like a Java waiter does and reports what it heard.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/redis_server.h"

struct redisContext;

namespace redisync::test {

/// One Redisson client instance (one client id) of the spec. Thread ids are passed per call,
/// as Java threads would use their own. Replies are returned raw so tests can assert the exact
/// values the spec names (nil = acquired, integer = PTTL, ...). Thread-compatible: one test
/// thread at a time (the admin connection itself is thread-safe).
class JavaLayoutClient {
 public:
  /// The spec's "no expiry" permit score (§8).
  static constexpr long long kNoExpiryScore = 922337203685477LL;
  /// The fair lock's default wait allowance (§4.1, §14).
  static constexpr long long kDefaultAllowance = 300000;

  /// A client with a fresh random client id (§1.2).
  explicit JavaLayoutClient(RedisServer& server);

  const std::string& id() const { return id_; }
  /// "<client id>:<thread>" (§1.2 owner field O).
  std::string owner(long long thread) const;
  /// "<client id>:<thread>:write" (§1.2 writer field W).
  std::string writer(long long thread) const;

  // Derived names (§1.1, §2.1, §4.1, §5.1, §7, §9, §11).
  static std::string tag(const std::string& name);
  static std::string lock_channel(const std::string& name);
  static std::string fair_channel(const std::string& name, const std::string& owner_field);
  static std::string fair_queue(const std::string& name);
  static std::string fair_timeouts(const std::string& name);
  static std::string rwlock_channel(const std::string& name);
  static std::string reader_marker(const std::string& name, const std::string& owner_field,
                                   long long k);
  static std::string semaphore_channel(const std::string& name);
  static std::string permit_timeouts(const std::string& name);
  static std::string latch_channel(const std::string& name);
  static std::string token_key(const std::string& name);
  /// The rate limiter's available permits (§17): TAG(N):value; per client, + ":" + client id.
  static std::string rate_value_key(const std::string& name);
  /// The rate limiter's grants (§17): TAG(N):permits; per client, + ":" + client id.
  static std::string rate_permits_key(const std::string& name);

  // --- Reentrant lock, spin lock, fenced lock, non-reentrant lock (§2, §10, §11, §12) ---
  /// §2.2: nil = acquired, else PTTL. `non_reentrant`: §12 (error reply on re-entry).
  Reply lock_acquire(const std::string& name, long long lease_ms, long long thread,
                     bool non_reentrant = false);
  /// §2.3: nil = not the owner, 0 = still held, 1 = released. Publishes `0` on the lock
  /// channel when released, unless `publish` is false (spin lock, §10).
  Reply lock_release(const std::string& name, long long thread, long long lease_ms,
                     bool publish = true);
  /// §11 acquire-with-token: [-1, token] when acquired, [PTTL, -1] otherwise.
  Reply fenced_acquire(const std::string& name, long long lease_ms, long long thread);

  // --- Fair lock (§4), also its non-reentrant form (§12) ---
  /// §4.3 (queue = true) or §4.4 (queue = false: 1 = not acquired). Uses this machine's clock.
  Reply fair_acquire(const std::string& name, long long lease_ms, long long thread, bool queue,
                     long long allowance_ms = kDefaultAllowance, bool non_reentrant = false);
  /// §4.6: nil = not the owner, 0 = still held, 1 = released (head woken on its channel).
  Reply fair_release(const std::string& name, long long thread, long long lease_ms);
  /// §4.5: leave the queue.
  Reply fair_give_up(const std::string& name, long long thread,
                     long long allowance_ms = kDefaultAllowance);

  // --- Read-write lock (§5) ---
  Reply read_acquire(const std::string& name, long long lease_ms, long long thread);   ///< §5.2
  Reply read_release(const std::string& name, long long thread);                       ///< §5.3
  Reply write_acquire(const std::string& name, long long lease_ms, long long thread);  ///< §5.4
  Reply write_release(const std::string& name, long long thread, long long lease_ms);  ///< §5.5

  // --- Counting semaphore (§7) ---
  Reply semaphore_try_acquire(const std::string& name, long long permits);      ///< 1 / 0
  Reply semaphore_release(const std::string& name, long long permits);          ///< publishes
  Reply semaphore_try_set_permits(const std::string& name, long long permits);  ///< 1 / 0

  // --- Permit-expirable semaphore (§8) ---
  /// A fresh permit id: 16 random raw bytes (§1.3).
  static std::string new_permit_id();
  /// §8 acquire of one permit `id` with lease (or kNoExpiryScore when lease_ms <= 0):
  /// "OK" status when taken; ":<score>" or nil when not.
  Reply permit_acquire(const std::string& name, const std::string& id, long long lease_ms);
  /// §8 release one id: 1 released, 0 unknown or expired.
  Reply permit_release(const std::string& name, const std::string& id);
  Reply permit_try_set_permits(const std::string& name, long long permits);  ///< 1 / 0
  /// §8 update lease of `id` (Redisson's updateLeaseTime): its score becomes this machine's now
  /// + lease_ms. 1 when held, 0 not.
  Reply permit_update_lease(const std::string& name, const std::string& id, long long lease_ms);

  // --- Rate limiter (§17), OVERALL type; the configuration hash set by the test ---
  /// §17.3 acquire of `permits` at this machine's now: nil = acquired, else ms to wait.
  Reply rate_acquire(const std::string& name, long long permits);
  /// §17.4 release of `permits`: the new value.
  Reply rate_release(const std::string& name, long long permits);
  /// §17.4 available as Redisson's availablePermits runs it (expired grants added back
  /// without the cap): the value.
  Reply rate_available(const std::string& name);

  // --- Count-down latch (§9) ---
  Reply latch_try_set_count(const std::string& name, long long count);  ///< 1 / 0
  Reply latch_count_down(const std::string& name);

 private:
  Reply eval(const std::string& script, const std::vector<std::string>& keys,
             const std::vector<std::string>& args);
  std::string release_record(const std::string& name) const;
  void drop_record(const std::string& record);

  RedisServer& server_;
  std::string id_;
  std::string publish_ = "PUBLISH";  // standalone deployment (§1.5)
};

/// Epoch milliseconds of this machine's clock (the Java client's "now", §1.4).
long long epoch_ms_now();

/// A plain subscriber connection to one channel (SUBSCRIBE, §1.5), like a Java waiter's: the
/// constructor returns once the server confirmed the subscription. Not thread-safe; one
/// owner. Throws std::runtime_error if it cannot connect or subscribe within 5 s.
class ChannelListener {
 public:
  ChannelListener(const RedisServer& server, std::string channel);
  ~ChannelListener();
  ChannelListener(const ChannelListener&) = delete;
  ChannelListener& operator=(const ChannelListener&) = delete;

  const std::string& channel() const { return channel_; }
  /// The payload of the next message on the channel, or nullopt when none came within
  /// `limit`. May be called again after a timeout.
  std::optional<std::string> next_message(std::chrono::milliseconds limit);

 private:
  /// One complete reply as its string elements, or nullopt on timeout.
  std::optional<std::vector<std::string>> next_push(std::chrono::milliseconds limit);

  std::string channel_;
  redisContext* ctx_ = nullptr;
};

}  // namespace redisync::test
