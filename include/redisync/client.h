// SPDX-License-Identifier: Apache-2.0
// redisync::Client: the entry point. Owns the connections to one Redis deployment, an I/O
// thread, the pub/sub subscriber shared by all waiters, and the lease-renewing watchdog.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <asio/io_context.hpp>

#include "redisync/export.h"
#include "redisync/async.h"
#include "redisync/config.h"
#include "redisync/reply.h"

namespace redisync {

class Lock;
class FairLock;
class ReadWriteLock;
class FencedLock;
class SpinLock;
struct SpinBackoff;
class Semaphore;
class PermitExpirableSemaphore;
class CountDownLatch;
class RateLimiter;
class NonReentrantLock;
class NonReentrantFairLock;

namespace detail {
class ClientCore;
}

/// Told to the holder when a lock it held was lost: the watchdog found the key gone (expired
/// during a pause, deleted, lost in a server restart) or could not reach the server before
/// the lease ran out.
struct REDISYNC_API LockLostEvent {
  /// The lock's name; a ReadWriteLock's side carries its suffix: "NAME (read lock)" or
  /// "NAME (write lock)".
  std::string name;
  std::int64_t owner;     ///< the thread/owner id that held it
  std::string reason;     ///< what was observed, for logs
  /// A PermitExpirableSemaphore permit whose lease ran out before its release: its id (32
  /// hex digits); `name` is then the semaphore's name and `owner` 0. Empty for locks.
  std::string permit_id = {};
};

/// A connection to one Redis deployment and the factory of its locks and synchronizers.
///
/// Thread safety: all member functions may be called from any thread concurrently.
/// Copy/move: not copyable; movable. Handles it creates (Lock, ...) share its internals and
/// stay valid after the Client object is moved; they fail with ClientClosedError after the
/// Client is destroyed.
/// Threads: a Client runs one event loop, on its I/O thread or, while a thread is blocked in
/// one of its calls (lock(), unlock(), ...), often on that thread: a blocked call writes its
/// request and reads its reply itself rather than handing both to the I/O thread. So async
/// completions (with no executor of their own), the lost-lock handler and anything posted to
/// io_context() run on whichever of those threads runs the loop, one at a time, never two at
/// once.
/// Lifetime: the destructor stops the I/O thread and fails pending calls with
/// ClientClosedError. Locks still held are not released (they expire after their lease, as
/// for a crashed process); release them first.
class REDISYNC_API Client {
 public:
  /// Connects lazily (on first use). Throws ConfigError if `config` is invalid (a database
  /// the server does not have is found on first use: that call throws ConfigError).
  explicit Client(Config config);
  /// Same as Client(Config::from_url(url)).
  explicit Client(const std::string& url);
  /// Stops renewing, sends what is queued (release records) if it can, closes connections
  /// and joins the I/O thread; handles that outlive it throw ClientClosedError. Destroyed
  /// inside one of its own handlers, it closes once that handler has returned; the process's
  /// exit waits for that close (up to 3 s).
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// A reentrant lock named `name` (Redisson RLock layout). Cheap; no server call.
  /// Throws InvalidArgument if the name is empty.
  Lock lock(const std::string& name);
  /// A fair (FIFO) lock named `name` (Redisson RFairLock layout). Cheap; no server call.
  FairLock fair_lock(const std::string& name);
  /// A read-write lock named `name` (Redisson RReadWriteLock layout). Cheap; no server call.
  ReadWriteLock read_write_lock(const std::string& name);
  /// A lock whose acquisitions return fencing tokens (Redisson RFencedLock layout).
  FencedLock fenced_lock(const std::string& name);
  /// A lock without pub/sub: waiters retry with `backoff` (Redisson spin lock layout).
  /// Throws InvalidArgument for an invalid backoff.
  SpinLock spin_lock(const std::string& name);
  SpinLock spin_lock(const std::string& name, const SpinBackoff& backoff);

  /// A counting semaphore named `name` (Redisson RSemaphore layout). Cheap; no server call.
  /// Throws InvalidArgument if the name is empty.
  Semaphore semaphore(const std::string& name);
  /// A semaphore of expiring, id-carrying permits (Redisson RPermitExpirableSemaphore
  /// layout). Cheap; no server call. Throws InvalidArgument if the name is empty.
  PermitExpirableSemaphore permit_expirable_semaphore(const std::string& name);
  /// A count-down latch named `name` (Redisson RCountDownLatch layout). Cheap; no server
  /// call. Throws InvalidArgument if the name is empty.
  CountDownLatch count_down_latch(const std::string& name);
  /// A rate limiter named `name` (Redisson RRateLimiter layout): at most `rate` permits per
  /// interval. Cheap; no server call. Throws InvalidArgument if the name is empty.
  RateLimiter rate_limiter(const std::string& name);
  /// A lock whose holder may not acquire it again (Redisson's non-reentrant lock, §12): a
  /// second acquire by the same owner throws ReentryError. Same layout as lock(name).
  NonReentrantLock non_reentrant_lock(const std::string& name);
  /// The non-reentrant form of fair_lock(name) (Redisson's non-reentrant fair lock, §12).
  NonReentrantFairLock non_reentrant_fair_lock(const std::string& name);

  /// Runs one Redis command and returns its reply. Blocks. Throws ServerError for an error
  /// reply, ConnectionError / TimeoutError when the server cannot answer.
  Reply execute(const std::vector<std::string>& args);

  /// Async form of execute(): completion signature void(std::exception_ptr, Reply).
  template <class Token>
  auto async_execute(std::vector<std::string> args, Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr, Reply)>(
        [this](auto handler, std::vector<std::string> a) {
          start_execute(std::move(a), detail::wrap_handler<decltype(handler),
                                                           asio::io_context::executor_type, Reply>(
                                          std::move(handler), io_context().get_executor()));
        },
        token, std::move(args));
  }

  /// This Client's id (a random UUID): the first half of every owner field it writes.
  const std::string& id() const;
  /// The process-unique id of the calling thread (assigned on first use; like Java's thread
  /// id). The owner of locks taken by the blocking API on this thread.
  static std::int64_t current_thread_id();
  /// A fresh owner id for async callers (a coroutine may resume on another thread, so async
  /// calls name their owner explicitly). Never equal to any thread's id.
  static std::int64_t new_owner_id();

  /// Replaces what happens when a held lock is lost (default: a line through Config::log,
  /// stderr unless set). Runs on the Client's loop (see Threads above): keep it short and
  /// never block in it.
  void on_lock_lost(std::function<void(const LockLostEvent&)> handler);

  /// When the lost-lock handler would run for the first of this Client's holds if no renewal
  /// were confirmed before then: the earliest local lease deadline (each hold's lease counted
  /// from the send of its last confirmed renewal or acquire, less the loss margin,
  /// docs/safety.md; rounded down to the millisecond, never later). It moves later with each confirmed renewal; nullopt while the Client
  /// holds nothing. For a guard outside the process that must act if this process stops
  /// running (SIGSTOP) while its work goes on elsewhere: `redisync run` hands it to the
  /// watcher of the command's process group. Any thread, the Client's I/O thread included;
  /// asks no server. Throws ClientClosedError after the Client is closed.
  std::optional<std::chrono::steady_clock::time_point> lease_deadline() const;

  const Config& config() const;
  /// The io_context of the Client's loop (default executor for async completions). Run by
  /// the Client alone (its I/O thread, or a thread blocked in one of its calls); never call
  /// run() or poll() on it.
  asio::io_context& io_context();
  /// Internals shared with handles; not part of the stable API.
  const std::shared_ptr<detail::ClientCore>& core() const { return core_; }

 private:
  void start_execute(std::vector<std::string> args,
                     std::function<void(std::exception_ptr, Reply)> done);
  std::shared_ptr<detail::ClientCore> core_;
};

}  // namespace redisync
