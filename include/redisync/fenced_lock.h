// SPDX-License-Identifier: Apache-2.0
// redisync::FencedLock: Redisson's fenced lock, getFencedLock (docs/wire-format.md §11): a reentrant lock
// whose every acquisition also returns a fencing token. See docs/fencing.md.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "redisync/export.h"
#include "redisync/basic_lock.h"

namespace redisync {

/// A reentrant lock (the layout of Lock, §2) plus a counter `redisson_lock_token:{name}` that
/// the server increments on every successful acquisition, re-entry included, and never
/// decreases (releases keep it). The value an acquisition got is its *fencing token*: pass it
/// along with every write to the protected resource, and have the resource reject a token
/// lower than the highest it has seen. A holder that was paused past its lease (and so lost
/// the lock to a newer holder with a higher token) is then refused instead of corrupting data.
///
/// The plain Lock API (lock(), try_lock_for(), unlock() ...) works too and also increments the
/// counter; token() reads the latest value.
class REDISYNC_API FencedLock : public BasicLock {
 public:
  FencedLock(std::shared_ptr<detail::ClientCore> core, std::string name);

  /// Blocks until acquired (watchdog lease) and returns this acquisition's token.
  std::uint64_t lock_and_get_token();
  /// Blocks until acquired with a fixed lease (never renewed); throws InvalidArgument if
  /// lease <= 0.
  std::uint64_t lock_and_get_token(Duration lease);
  /// Waits up to `wait` (watchdog lease on success); the token, or nullopt if not acquired.
  std::optional<std::uint64_t> try_lock_and_get_token_for(Duration wait);
  /// Waits up to `wait`; on success the lock has the fixed `lease`.
  std::optional<std::uint64_t> try_lock_and_get_token_for(Duration wait, Duration lease);
  /// The latest token handed out (0 if never locked). Reads the master.
  std::uint64_t token() const;

  /// Completion: void(std::exception_ptr, std::uint64_t token). lease <= 0: watchdog lease;
  /// waits without limit. Cancellable as BasicLock::async_lock.
  template <class Token>
  auto async_lock_and_get_token(std::int64_t owner, Duration lease, Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr, std::uint64_t)>(
        [self = *this, owner, lease](auto handler) {
          auto cancel = detail::connect_cancellation(handler, self.core_);
          auto done = self.wrap<std::uint64_t>(std::move(handler));
          self.start_token_acquire(owner, lease, Duration{-1},
                                   [done](std::exception_ptr e, std::optional<std::uint64_t> t) {
                                     done(e, t.value_or(0));
                                   },
                                   std::move(cancel));
        },
        token);
  }
  /// Completion: void(std::exception_ptr, std::optional<std::uint64_t> token); nullopt when
  /// not acquired within `wait` (<= 0: one attempt). lease <= 0: watchdog lease. Cancellable
  /// as BasicLock::async_lock.
  template <class Token>
  auto async_try_lock_and_get_token(std::int64_t owner, Duration wait, Duration lease,
                                    Token&& token) {
    return asio::async_initiate<Token, void(std::exception_ptr, std::optional<std::uint64_t>)>(
        [self = *this, owner, wait, lease](auto handler) {
          auto cancel = detail::connect_cancellation(handler, self.core_);
          self.start_token_acquire(owner, lease, detail::clamp_wait(wait),
                                   self.wrap<std::optional<std::uint64_t>>(std::move(handler)),
                                   std::move(cancel));
        },
        token);
  }

 private:
  using TokenDone = std::function<void(std::exception_ptr, std::optional<std::uint64_t>)>;
  void start_token_acquire(std::int64_t owner, Duration lease, Duration wait, TokenDone done,
                           std::shared_ptr<detail::CancelSignal> cancel = nullptr) const;
  std::optional<std::uint64_t> acquire_token(Duration wait, Duration lease);
};

}  // namespace redisync
