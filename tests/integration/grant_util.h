// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the direct-handoff tests (grant_test.cpp, rw_grant_test.cpp): a grant-mode
// client configuration, the server's clock, and two races every grant-capable kind must pass
// (a waiter giving up as it is granted; a Client closed mid-wait).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "redisync/redisync.h"
#include "support/java_layout.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

namespace redisync::test::grant {

using namespace std::chrono_literals;

inline Config grant_config(const RedisServer& server, std::chrono::milliseconds lease = 2000ms) {
  auto cfg = config_for(server);
  cfg.handoff = Handoff::grant;
  cfg.grant_lease = lease;
  return cfg;
}

/// The registrations of a lock's grant-capable waiters (a sorted set, by owner field).
inline std::string lock_registrations(const std::string& name) {
  return "redisync_lock_grant:{" + name + "}";
}

/// The registrations of a fair lock's grant-capable waiters (a hash, by owner field).
inline std::string fair_registrations(const std::string& name) {
  return "redisync_fair_grant:{" + name + "}";
}

/// True while the fair-lock waiter `field` is in the queue of `name`.
inline bool in_fair_queue(RedisServer& s, const std::string& name, const std::string& field) {
  for (const auto& e :
       s.command({"LRANGE", JavaLayoutClient::fair_queue(name), "0", "-1"}).elements) {
    if (e.as_string() == field) return true;
  }
  return false;
}

/// Nothing of the fair-lock waiter `field` is left on `s`: no queue entry, no deadline, no grant
/// registration.
inline bool fair_waiter_gone(RedisServer& s, const std::string& name, const std::string& field) {
  return !in_fair_queue(s, name, field) &&
         s.command({"ZSCORE", JavaLayoutClient::fair_timeouts(name), field}).is_nil() &&
         s.command({"HEXISTS", fair_registrations(name), field}).as_integer() == 0;
}

/// "<client id>:<thread id>" of the calling thread of `c`.
inline std::string field_of(const Client& c) {
  return c.id() + ":" + std::to_string(Client::current_thread_id());
}

/// The server's clock in epoch ms (registration deadlines are server times).
inline long long server_ms(RedisServer& server) {
  auto t = server.command({"TIME"});
  return std::stoll(t.elements[0].as_string()) * 1000 + std::stoll(t.elements[1].as_string()) / 1000;
}

/// Runs, on its own thread, `try_wait(wait)` on the lock `make()` makes there (a lock or
/// ReadWriteLock: its write side), and unlocks what it got; the future says whether it did.
template <class Make>
std::future<bool> try_lock_async(Make make, std::chrono::milliseconds wait = 20s) {
  return std::async(std::launch::async, [make, wait] {
    auto lock = make();
    const bool got = lock.try_lock_for(wait);
    if (got) lock.unlock();
    return got;
  });
}

/// Rounds in which a waiter's wait ends about when the holder's release grants it the lock.
/// Whichever comes first, the lock is then either the waiter's (it said so) or passed on at
/// once: with a 5 s grant lease, a grant left behind would keep the lock for 5 s.
/// `lock_of(client, name)` makes a client's lock; `hold(lock, round)` / `release(lock, round)`
/// take and give back the holder's; `is_registered(server, name, field)` says whether the
/// waiter with field_of() `field` is registered now.
template <class LockOf, class Hold, class Release, class IsRegistered>
void give_up_as_granted_rounds(LockOf lock_of, Hold hold, Release release,
                               IsRegistered is_registered) {
  RedisServer server;
  Client holder(grant_config(server, 5000ms)), waiter(grant_config(server, 5000ms));
  const auto name = unique_name("grant-race:");
  auto held = lock_of(holder, name);
  int got_count = 0, gave_up = 0;
  for (int round = 0; round < load_count(40); ++round) {
    hold(held, round);
    std::string field;
    std::atomic<bool> known{false};
    const auto wait = std::chrono::milliseconds(20 + round % 7);
    auto done = try_lock_async(
        [&] {
          field = field_of(waiter);
          known = true;
          return lock_of(waiter, name);
        },
        wait);
    ASSERT_TRUE(wait_until([&] { return known.load(); }, 5s));
    // Release about as the wait ends: right after the registration plus a varying delay.
    wait_until([&] { return is_registered(server, name, field); }, 1s, 1ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(10 + (round * 3) % 15));
    release(held, round);
    ASSERT_EQ(done.wait_for(10s), std::future_status::ready);
    (done.get() ? got_count : gave_up)++;
    // Nobody holds it now (the waiter released or gave up): it must be free well within
    // the 5 s grant lease.
    ASSERT_TRUE(wait_until([&] { return server.command({"EXISTS", name}).as_integer() == 0; },
                           1500ms))
        << "round " << round << ": the lock stayed held by "
        << server.command({"HGETALL", name}).debug_string();
    EXPECT_TRUE(wait_until([&] { return !is_registered(server, name, field); }, 1s))
        << "round " << round;
  }
  std::cout << "[ info ] granted " << got_count << ", gave up " << gave_up << "\n";
}

/// Runs `lock.try_lock_for(20 s, 400 ms fixed lease)` on its own thread and keeps what it got
/// (never unlocks: a grantee that does nothing after the grant). Returns once `field` holds the
/// waiting thread's field_of(`client`) + `suffix`; the future says whether it got the lock.
template <class Lock>
std::future<bool> keep_async(Client& client, Lock& lock, const std::string& suffix,
                             std::string& field) {
  std::promise<void> known;
  auto field_known = known.get_future();
  auto got = std::async(std::launch::async, [&client, &lock, &field, suffix,
                                             known = std::move(known)]() mutable {
    field = field_of(client) + suffix;
    known.set_value();
    return lock.try_lock_for(20s, 400ms);
  });
  field_known.wait();
  return got;
}

/// A grantee's hold lasts its own lease, not the releaser's (longer) grant lease: granted a
/// lock with a 400 ms fixed lease under a 10 s grant lease, a grantee that then does nothing
/// (as if killed in its section) leaves the lock free within its lease. Before the fix the
/// lock stayed held by nobody for the whole grant lease (the chaos kill case: two leases).
/// `lock_of` makes a client's lock; `is_registered` says whether a field_of() is registered.
template <class LockOf, class IsRegistered>
void granted_hold_lasts_its_own_lease(LockOf lock_of, IsRegistered is_registered) {
  RedisServer server;
  Client holder(grant_config(server, 10000ms)), grantee(grant_config(server, 10000ms));
  const auto name = unique_name("grant-lease:");
  auto held = lock_of(holder, name);
  held.lock();
  auto lock = lock_of(grantee, name);
  std::string field;
  auto got = keep_async(grantee, lock, "", field);
  ASSERT_TRUE(wait_until([&] { return is_registered(server, name, field); }, 5s));
  held.unlock();
  ASSERT_EQ(got.wait_for(10s), std::future_status::ready);
  ASSERT_TRUE(got.get());
  EXPECT_TRUE(wait_until([&] { return server.command({"EXISTS", name}).as_integer() == 0; }, 4s))
      << "the granted hold outlived its 400 ms lease: PTTL "
      << server.command({"PTTL", name}).as_integer() << " ms";
}

/// The releaser's grant lease is the one the granted hold has on the server, whatever the
/// grantee's own Config::grant_lease says. A holder on a 300 ms grant lease grants to a waiter
/// configured with 6 s (whose extension to its 20 s fixed lease is then due only after 2 s):
/// at no moment may the hold be gone on the server while the grantee has not been told it may
/// be lost. Before the fix the grantee counted its own 6 s: the server let the grant expire at
/// 300 ms and the grantee went on believing it held the lock until its extension found it gone.
/// `lock_of` makes a client's lock (`holds_of` its BasicLock: the lock itself, or a write side);
/// `is_registered` says whether a field_of() + `suffix` is registered now.
template <class LockOf, class HoldsOf, class IsRegistered>
void releasers_grant_lease_bounds_the_granted_hold(LockOf lock_of, HoldsOf holds_of,
                                                   IsRegistered is_registered,
                                                   const std::string& suffix = "") {
  RedisServer server;
  Client holder(grant_config(server, 300ms)), grantee(grant_config(server, 6000ms));
  const auto name = unique_name("grant-lease-mix:");
  auto held = lock_of(holder, name);
  held.lock();
  std::string field;
  std::atomic<bool> known{false};
  struct Outcome {
    bool got = false;
    int checks = 0;
    std::string violation;
  };
  auto done = std::async(std::launch::async, [&] {
    auto lock = lock_of(grantee, name);
    field = field_of(grantee) + suffix;
    known = true;
    Outcome out;
    out.got = lock.try_lock_for(20s, 20s);
    if (!out.got) return out;
    auto hold = holds_of(lock);  // a cheap handle on the same hold
    // Bounded: 1.5 s of checks, past the 300 ms grant lease and short of the 2 s extension.
    const auto until = std::chrono::steady_clock::now() + 1500ms;
    while (std::chrono::steady_clock::now() < until && out.violation.empty()) {
      const bool on_server = server.command({"HEXISTS", name, field}).as_integer() == 1;
      ++out.checks;
      if (!on_server && !hold.lost_by_current_thread()) {
        out.violation = "the hold was gone on the server while the grantee was not told";
      }
      std::this_thread::sleep_for(5ms);
    }
    lock.unlock();
    return out;
  });
  ASSERT_TRUE(wait_until([&] { return known.load() && is_registered(server, name, field); }, 5s));
  held.unlock();
  ASSERT_EQ(done.wait_for(15s), std::future_status::ready);
  const Outcome out = done.get();
  ASSERT_TRUE(out.got);
  EXPECT_GT(out.checks, 0);
  EXPECT_EQ(out.violation, "");
}

/// The same when the grantee takes its grant by an attempt (no grant message reached it; the
/// attempt finds its field and replies -3): the taking attempt sets the hold's own lease. The
/// lock starts held by a stranger; once the waiter is registered, one script does what a
/// release's grant does (the stranger's hold deleted, the waiter's field `suffix` -> 1 with
/// `extra` fields, e.g. a read-write lock's mode, a 10 s grant lease, the registration in
/// `registrations` and its id removed, the grant mark set; `extra` also in the stranger's hold)
/// but publishes nothing: the waiter's next attempt, due within a third of the grant lease, takes it with its 400 ms
/// fixed lease.
template <class LockOf>
void grant_taken_by_attempt_lasts_its_own_lease(LockOf lock_of, const std::string& prefix,
                                                const std::string& suffix,
                                                std::vector<std::string> extra = {}) {
  RedisServer server;
  Client grantee(grant_config(server, 10000ms));
  const auto name = unique_name("grant-lease:");
  const std::string registrations = prefix + "{" + name + "}";
  std::vector<std::string> held{"HSET", name, "stranger:1" + suffix, "1"};
  held.insert(held.end(), extra.begin(), extra.end());
  server.command(held);
  server.command({"PEXPIRE", name, "30000"});
  auto lock = lock_of(grantee, name);
  std::string field;
  auto got = keep_async(grantee, lock, suffix, field);
  ASSERT_TRUE(wait_until(
      [&] { return !server.command({"ZSCORE", registrations, field}).is_nil(); }, 5s));
  // The grant marked with the waiter's grant id, read from its registration's id entry.
  const std::string ids = prefix.substr(0, prefix.size() - 1) + "_id:{" + name + "}";
  std::vector<std::string> grant{
      "EVAL",
      "redis.call('del', KEYS[1]); redis.call('hset', KEYS[1], ARGV[1], 1); "
      "for i = 2, #ARGV, 2 do redis.call('hset', KEYS[1], ARGV[i], ARGV[i + 1]) end; "
      "redis.call('pexpire', KEYS[1], 10000); redis.call('zrem', KEYS[2], ARGV[1]); "
      "local id = string.match(redis.call('hget', KEYS[3], ARGV[1]), '^(%x+):'); "
      "redis.call('hdel', KEYS[3], ARGV[1]); "
      "redis.call('set', KEYS[4], ARGV[1] .. ' ' .. id, 'px', 10000)",
      "4", name, registrations, ids, "redisync_grant_mark:{" + name + "}", field};
  grant.insert(grant.end(), extra.begin(), extra.end());
  server.command(grant);
  ASSERT_EQ(got.wait_for(10s), std::future_status::ready);
  ASSERT_TRUE(got.get());
  EXPECT_TRUE(
      wait_until([&] { return server.command({"EXISTS", name}).as_integer() == 0; }, 2500ms))
      << "the hold taken by an attempt outlived its 400 ms lease: PTTL "
      << server.command({"PTTL", name}).as_integer() << " ms";
}

/// A waiter whose Client is destroyed mid-wait is deregistered at the close (not left to its
/// registration's 10 s expiry): the next release then wakes (`channel` hears `message`)
/// instead of granting to it. `lock_of` makes the waiting lock of a client; `is_registered`
/// says whether a field_of() is registered now; `channel_of` is the channel a release wakes
/// that field on.
template <class LockOf, class IsRegistered, class ChannelOf>
void close_mid_wait(LockOf lock_of, IsRegistered is_registered, ChannelOf channel_of,
                    const std::string& message = "0") {
  RedisServer server;
  Client holder(grant_config(server));
  auto client = std::make_unique<Client>(grant_config(server));
  const auto name = unique_name("grant-close:");
  auto held = lock_of(holder, name);
  held.lock();
  auto lock = lock_of(*client, name);
  std::string waiter_field;
  std::atomic<bool> known{false};
  auto waiter = std::async(std::launch::async, [&] {
    waiter_field = field_of(*client);
    known = true;
    try {
      return lock.try_lock_for(20s) ? std::string("acquired") : std::string("timed out");
    } catch (const ClientClosedError&) {
      return std::string("closed");
    }
  });
  ASSERT_TRUE(wait_until([&] { return known.load(); }, 5s));
  ASSERT_TRUE(wait_until([&] { return is_registered(server, name, waiter_field); }, 5s));
  client.reset();
  EXPECT_FALSE(is_registered(server, name, waiter_field));  // gone right after the close
  ASSERT_EQ(waiter.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(waiter.get(), "closed");
  ChannelListener ear(server, channel_of(name, waiter_field));
  held.unlock();
  EXPECT_EQ(ear.next_message(5s), message);
  EXPECT_EQ(server.command({"EXISTS", name}).as_integer(), 0);  // nobody was granted it
}

}  // namespace redisync::test::grant
