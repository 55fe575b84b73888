// SPDX-License-Identifier: Apache-2.0
// The lock contract's typed-test machinery: one trait per lock kind (how to make a handle on a
// Client, what excludes it, whether its holder may re-enter) and the fixture every contract
// suite derives from (lock_contract_test.cpp, lock_contract_leases_test.cpp,
// lock_contract_faults_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <type_traits>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_config.h"
#include "support/test_util.h"

namespace redisync::test::contract {

using namespace std::chrono_literals;

// What a trait says:
//   Handle     the kind's handle type; make(client, name) returns one.
//   Rival      a handle that the kind excludes; rival(client, name) returns one. The kind
//              itself for the exclusive kinds, the write lock for a read lock.
//   shared     true if two owners of the kind hold it at once (readers).
//   reentrant  true if the holder's second acquire is a second hold; false if it is refused
//              with ReentryError (the non-reentrant kinds).
template <class H>
struct Exclusive {
  using Handle = H;
  using Rival = H;
  static constexpr bool shared = false;
  static constexpr bool reentrant = true;
};

struct PlainLock : Exclusive<Lock> {
  static constexpr const char* label = "Lock";
  static Handle make(Client& c, const std::string& name) { return c.lock(name); }
  static Rival rival(Client& c, const std::string& name) { return make(c, name); }
};
struct Fair : Exclusive<FairLock> {
  static constexpr const char* label = "FairLock";
  static Handle make(Client& c, const std::string& name) { return c.fair_lock(name); }
  static Rival rival(Client& c, const std::string& name) { return make(c, name); }
};
struct Fenced : Exclusive<FencedLock> {
  static constexpr const char* label = "FencedLock";
  static Handle make(Client& c, const std::string& name) { return c.fenced_lock(name); }
  static Rival rival(Client& c, const std::string& name) { return make(c, name); }
};
struct Spin : Exclusive<SpinLock> {
  static constexpr const char* label = "SpinLock";
  static Handle make(Client& c, const std::string& name) { return c.spin_lock(name); }
  static Rival rival(Client& c, const std::string& name) { return make(c, name); }
};
struct Write : Exclusive<WriteLock> {
  static constexpr const char* label = "WriteLock";
  static Handle make(Client& c, const std::string& name) {
    return c.read_write_lock(name).write_lock();
  }
  static Rival rival(Client& c, const std::string& name) { return make(c, name); }
};
struct Read {
  using Handle = ReadLock;
  using Rival = WriteLock;
  static constexpr bool shared = true;
  static constexpr bool reentrant = true;
  static constexpr const char* label = "ReadLock";
  static Handle make(Client& c, const std::string& name) {
    return c.read_write_lock(name).read_lock();
  }
  static Rival rival(Client& c, const std::string& name) {
    return c.read_write_lock(name).write_lock();
  }
};
struct NonReentrant : Exclusive<NonReentrantLock> {
  static constexpr bool reentrant = false;
  static constexpr const char* label = "NonReentrantLock";
  static Handle make(Client& c, const std::string& name) { return c.non_reentrant_lock(name); }
  static Rival rival(Client& c, const std::string& name) { return make(c, name); }
};
struct NonReentrantFair : Exclusive<NonReentrantFairLock> {
  static constexpr bool reentrant = false;
  static constexpr const char* label = "NonReentrantFairLock";
  static Handle make(Client& c, const std::string& name) { return c.non_reentrant_fair_lock(name); }
  static Rival rival(Client& c, const std::string& name) { return make(c, name); }
};

using Kinds =
    ::testing::Types<PlainLock, Fair, Fenced, Spin, Write, Read, NonReentrant, NonReentrantFair>;

struct KindNames {
  template <class K>
  static std::string GetName(int) {
    return K::label;
  }
};

/// Two clients (two owners) on one server, and a lock name. The watchdog lease is 1.5 s:
/// renewals every 500 ms, several within a test.
template <class K>
class ContractFixture : public ::testing::Test {
 protected:
  using Handle = typename K::Handle;

  RedisServer server_;
  Client a_{watchdog_config(server_, 1500ms)};
  Client b_{watchdog_config(server_, 1500ms)};
  const std::string name_ = unique_name("contract:");

  /// The kind on client a (the test's own owner) and on client b (another owner).
  Handle mine() { return K::make(a_, name_); }
  Handle theirs() { return K::make(b_, name_); }
  /// What the kind excludes, on client b.
  typename K::Rival rival() { return K::rival(b_, name_); }

  /// Runs `body` on another thread (another owner) and returns its result.
  template <class F>
  static auto elsewhere(F body) {
    return std::async(std::launch::async, body).get();
  }

  /// One attempt of `lock` on another thread; releases a hold it got. True if it got one.
  template <class L>
  static bool acquirable_elsewhere(L& lock) {
    return elsewhere([&] {
      const bool got = lock.try_lock();
      if (got) lock.unlock();
      return got;
    });
  }

  bool key_exists() { return server_.command({"EXISTS", name_}).as_integer() == 1; }
  long long pttl() { return server_.command({"PTTL", name_}).as_integer(); }
};

}  // namespace redisync::test::contract
