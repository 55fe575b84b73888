// SPDX-License-Identifier: Apache-2.0
#include "chaos/lockers.h"

#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#if __has_include("redisync/red_lock.h")
#include "redisync/red_lock.h"
#define REDISYNC_CHAOS_HAS_REDLOCK 1
#endif

namespace redisync::chaos_worker {

namespace {

template <class L>
struct PlainLocker : Locker {
  explicit PlainLocker(L l) : lock(std::move(l)) {}
  std::optional<std::uint64_t> try_acquire(Duration wait) override {
    if (lock.try_lock_for(wait)) return 0;
    return std::nullopt;
  }
  void unlock() override { lock.unlock_checked(); }
  std::string field() const override {
    return lock.owner_field(redisync::Client::current_thread_id());
  }
  L lock;
};

struct FencedLocker : Locker {
  explicit FencedLocker(redisync::FencedLock l) : lock(std::move(l)) {}
  std::optional<std::uint64_t> try_acquire(Duration wait) override {
    return lock.try_lock_and_get_token_for(wait);
  }
  void unlock() override { lock.unlock_checked(); }
  std::string field() const override {
    return lock.owner_field(redisync::Client::current_thread_id());
  }
  redisync::FencedLock lock;
};

// MultiLock over two locks on one server: `name` (whose owner field the fixture checks) and
// `name:2`.
struct MultiLocker : Locker {
  MultiLocker(redisync::Client& c, const std::string& name)
      : first(c.lock(name)), lock({first, c.lock(name + ":2")}) {}
  std::optional<std::uint64_t> try_acquire(Duration wait) override {
    if (lock.try_lock_for(wait)) return 0;
    return std::nullopt;
  }
  void unlock() override { lock.unlock_checked(); }
  std::string field() const override {
    return first.owner_field(redisync::Client::current_thread_id());
  }
  redisync::Lock first;
  redisync::MultiLock lock;
};

// --- The negative control: deliberately broken locks. Never use these anywhere else. ---

// Acquire ignores a held lock: it just adds its field and sets the expiry.
struct IgnoreHeldLocker : Locker {
  IgnoreHeldLocker(redisync::Client& c, std::string n, long lease_ms)
      : client(c), name(std::move(n)), lease(std::to_string(lease_ms)),
        own("broken:" + std::to_string(::getpid())) {}
  std::optional<std::uint64_t> try_acquire(Duration) override {
    client.execute({"HSET", name, own, "1"});
    client.execute({"PEXPIRE", name, lease});
    return 0;
  }
  void unlock() override {
    client.execute({"HDEL", name, own});
    client.execute({"PUBLISH", "redisson_lock__channel:{" + name + "}", "0"});
  }
  std::string field() const override { return own; }
  redisync::Client& client;
  std::string name;
  std::string lease;
  std::string own;
};

// A fixed lease, never renewed: a hold longer than the lease silently loses the lock. The
// library's local lease deadline would tell the holder before the lease ends (and a holder
// told does not write), so this broken lock also ignores the lost-lock notice (see main).
struct NoRenewLocker : PlainLocker<redisync::Lock> {
  NoRenewLocker(redisync::Lock l, long lease_ms)
      : PlainLocker<redisync::Lock>(std::move(l)), lease(lease_ms) {}
  std::optional<std::uint64_t> try_acquire(Duration wait) override {
    if (lock.try_lock_for(wait, lease)) return 0;
    return std::nullopt;
  }
  Duration lease;
};

// A release that "repairs" a failed unlock() by deleting the lock, whoever holds it now, and
// waking a waiter (one script, so a lost reply does not stop the wake-up).
struct BlindReleaseLocker : PlainLocker<redisync::Lock> {
  BlindReleaseLocker(redisync::Lock l, redisync::Client& c, std::string n)
      : PlainLocker<redisync::Lock>(std::move(l)), client(c), name(std::move(n)) {}
  void unlock() override {
    try {
      lock.unlock_checked();  // unlock() never throws: the failure must be seen to be "fixed"
    } catch (const redisync::Error&) {
      // The "repair" deletes the lock whoever holds it. It waits (bounded) until someone does:
      // a delete that landed between two holders would break nothing, and a negative control
      // that only sometimes breaks the lock would only sometimes prove the checker can fail.
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (std::chrono::steady_clock::now() < give_up) {
        const auto deleted = client.execute(
            {"EVAL",
             "if redis.call('exists', KEYS[1]) == 0 then return 0 end "
             "redis.call('del', KEYS[1]) redis.call('publish', KEYS[2], '0') return 1",
             "2", name, "redisson_lock__channel:{" + name + "}"});
        if (deleted.is_integer() && deleted.integer == 1) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  }
  redisync::Client& client;
  std::string name;
};

#ifdef REDISYNC_CHAOS_HAS_REDLOCK
// RedLock over one Lock of the same name per lock server (one Client each).
struct RedLocker : Locker {
  explicit RedLocker(std::vector<redisync::AnyLock> members) : lock(std::move(members)) {}
  std::optional<std::uint64_t> try_acquire(Duration wait) override {
    if (lock.try_lock_for(wait)) return 0;
    return std::nullopt;
  }
  void unlock() override { lock.unlock_checked(); }
  std::string field() const override { return "-"; }
  redisync::RedLock lock;
};
#endif

// A Semaphore permit: no owner, no lease (a killed holder's permit is lost for good).
struct SemaphoreLocker : Locker {
  explicit SemaphoreLocker(redisync::Semaphore s) : sem(std::move(s)) { writes = false; }
  std::optional<std::uint64_t> try_acquire(Duration wait) override {
    if (sem.try_acquire_for(wait)) return 0;
    return std::nullopt;
  }
  void unlock() override { sem.release(); }
  std::string field() const override { return "-"; }
  redisync::Semaphore sem;
};

// A PermitExpirableSemaphore permit with a fixed lease; a permit gone (expired) at release is
// reported as a lost hold.
struct PermitLocker : Locker {
  PermitLocker(redisync::PermitExpirableSemaphore s, long lease) : sem(std::move(s)) {
    writes = false;
    unreported_lease_ms = lease;
  }
  std::optional<std::uint64_t> try_acquire(Duration wait) override {
    auto got = sem.try_acquire_for(wait, Duration{unreported_lease_ms});
    if (!got) return std::nullopt;
    id = *got;
    return 0;
  }
  void unlock() override {
    try {
      sem.release(id);
    } catch (const redisync::UnknownPermitError& e) {
      throw redisync::LockLostError(e.what());
    }
  }
  std::string field() const override { return id.empty() ? "-" : id; }
  redisync::PermitExpirableSemaphore sem;
  std::string id;
};

}  // namespace

std::unique_ptr<Locker> make_locker(const Options& o,
                                    std::vector<std::unique_ptr<redisync::Client>>& clients) {
  auto& client = *clients.front();
  if (o.kind == "lock") return std::make_unique<PlainLocker<redisync::Lock>>(client.lock(o.name));
  if (o.kind == "fair") {
    return std::make_unique<PlainLocker<redisync::FairLock>>(client.fair_lock(o.name));
  }
  if (o.kind == "fenced") return std::make_unique<FencedLocker>(client.fenced_lock(o.name));
  if (o.kind == "nonreentrant") {
    return std::make_unique<PlainLocker<redisync::NonReentrantLock>>(
        client.non_reentrant_lock(o.name));
  }
  if (o.kind == "nonreentrant-fair") {
    return std::make_unique<PlainLocker<redisync::NonReentrantFairLock>>(
        client.non_reentrant_fair_lock(o.name));
  }
  if (o.kind == "rw-write" || (o.kind == "rw-mix" && o.id % 2 == 0)) {
    return std::make_unique<PlainLocker<redisync::WriteLock>>(
        client.read_write_lock(o.name).write_lock());
  }
  if (o.kind == "rw-mix") {
    auto reader = std::make_unique<PlainLocker<redisync::ReadLock>>(
        client.read_write_lock(o.name).read_lock());
    reader->writes = false;
    return reader;
  }
  if (o.kind == "multi") return std::make_unique<MultiLocker>(client, o.name);
  if (o.kind == "semaphore") {
    auto sem = client.semaphore(o.name);
    sem.try_set_permits(o.permits);  // the first worker creates it; a no-op for the others
    return std::make_unique<SemaphoreLocker>(sem);
  }
  if (o.kind == "pes") {
    auto sem = client.permit_expirable_semaphore(o.name);
    sem.try_set_permits(o.permits);
    return std::make_unique<PermitLocker>(sem, o.watchdog_ms);
  }
  if (o.kind == "broken-ignore") {
    return std::make_unique<IgnoreHeldLocker>(client, o.name, o.watchdog_ms);
  }
  if (o.kind == "broken-norenew") {
    return std::make_unique<NoRenewLocker>(client.lock(o.name), o.watchdog_ms);
  }
  if (o.kind == "broken-release") {
    return std::make_unique<BlindReleaseLocker>(client.lock(o.name), client, o.name);
  }
#ifdef REDISYNC_CHAOS_HAS_REDLOCK
  if (o.kind == "redlock") {
    std::vector<redisync::AnyLock> members;
    for (auto& c : clients) members.emplace_back(c->lock(o.name));
    return std::make_unique<RedLocker>(std::move(members));
  }
#endif
  throw std::invalid_argument("unknown kind " + o.kind + " (redlock needs redisync/red_lock.h)");
}

}  // namespace redisync::chaos_worker
