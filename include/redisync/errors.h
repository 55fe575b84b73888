// SPDX-License-Identifier: Apache-2.0
// Errors raised by redisync.
//
// Every exception thrown by the library derives from redisync::Error, itself a
// std::system_error carrying a redisync::errc code in redisync::error_category(). Catch
// redisync::Error to handle everything, or a subclass for the cases callers treat differently.
// Messages name the object (lock name) and the server where they apply.
#pragma once

#include <string>
#include <system_error>
#include <utility>

#include "redisync/export.h"

namespace redisync {

/// Error codes of redisync::error_category().
enum class errc {
  connection_failed = 1,   ///< could not connect, or the connection dropped mid-request
  auth_failed,             ///< the server refused AUTH (wrong or missing password / user)
  timeout,                 ///< no reply within Config::timeout
  server_error,            ///< Redis answered with an error reply (e.g. WRONGTYPE)
  protocol_error,          ///< the peer sent bytes that are not valid RESP
  invalid_config,          ///< a Config field or URL is invalid
  invalid_argument,        ///< a call got a value it cannot use (negative count, empty name...)
  not_owner,               ///< release by a thread/owner that does not hold the lock
  lock_lost,               ///< the lock expired or was removed while this owner believed it held it
  upgrade_would_deadlock,  ///< a read holder asked for the write lock of the same ReadWriteLock
  client_closed,           ///< the Client was shut down while the call was pending
  unknown_permit,          ///< a permit id that is not (or no longer) held
  multi_lock_failed,       ///< a MultiLock / RedLock could not reach enough members (see MultiLockError)
  not_configured,          ///< a RateLimiter was used before any rate was set on it
  reentry_refused,         ///< the holder of a non-reentrant lock asked for it again
  cancelled,               ///< an async wait was cancelled (Asio per-operation cancellation)
};

/// The category of redisync::errc; name() is "redisync".
REDISYNC_API const std::error_category& error_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), error_category()};
}

/// Base of every redisync exception.
/// what() is the message alone (std::system_error would append the category's text).
class REDISYNC_API Error : public std::system_error {
 public:
  Error(errc code, const std::string& what)
      : std::system_error(make_error_code(code), what), message_(what) {}
  ~Error() override;
  errc value() const noexcept { return static_cast<errc>(code().value()); }
  const char* what() const noexcept override;

 private:
  std::string message_;
};

/// The server could not be reached, or the connection dropped before the reply arrived.
/// maybe_sent() is true when the request had been written before the connection dropped, so
/// the server may have run it.
class REDISYNC_API ConnectionError : public Error {
 public:
  explicit ConnectionError(const std::string& what, errc code = errc::connection_failed,
                           bool maybe_sent = false)
      : Error(code, what), maybe_sent_(maybe_sent) {}
  bool maybe_sent() const noexcept { return maybe_sent_; }

 private:
  bool maybe_sent_;
};

/// The server refused our credentials. A ConnectionError, since no command can run.
class REDISYNC_API AuthError : public ConnectionError {
 public:
  explicit AuthError(const std::string& what) : ConnectionError(what, errc::auth_failed) {}
};

/// No reply within the configured timeout (server paused, overloaded or unreachable).
class REDISYNC_API TimeoutError : public Error {
 public:
  explicit TimeoutError(const std::string& what) : Error(errc::timeout, what) {}
};

/// Redis answered with an error reply; reply() is the server's text (e.g. "WRONGTYPE ...").
class REDISYNC_API ServerError : public Error {
 public:
  ServerError(const std::string& what, std::string reply)
      : Error(errc::server_error, what), reply_(std::move(reply)) {}
  const std::string& reply() const noexcept { return reply_; }

 private:
  std::string reply_;
};

/// The peer sent bytes that are not valid RESP. The connection is dropped and re-established.
class REDISYNC_API ProtocolError : public Error {
 public:
  explicit ProtocolError(const std::string& what) : Error(errc::protocol_error, what) {}
};

/// A Config field or URL is invalid; the message names the field. Also thrown by any call
/// when the server refuses the Config's database (SELECT: no such index), at once, without
/// resends: no retry can change that answer.
class REDISYNC_API ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& what) : Error(errc::invalid_config, what) {}
};

/// A call got an argument it cannot use; the message names the argument.
class REDISYNC_API InvalidArgument : public Error {
 public:
  explicit InvalidArgument(const std::string& what) : Error(errc::invalid_argument, what) {}
};

/// Release by an owner that does not hold the lock (Java: IllegalMonitorStateException).
class REDISYNC_API NotOwnerError : public Error {
 public:
  explicit NotOwnerError(const std::string& what) : Error(errc::not_owner, what) {}
};

/// The lock this owner held expired or was removed behind its back (lease ran out while the
/// process was paused, the key was deleted, the server restarted without it).
class REDISYNC_API LockLostError : public Error {
 public:
  explicit LockLostError(const std::string& what) : Error(errc::lock_lost, what) {}
};

/// A read holder asked for the write lock of the same ReadWriteLock; waiting would never end.
class REDISYNC_API UpgradeError : public Error {
 public:
  explicit UpgradeError(const std::string& what) : Error(errc::upgrade_would_deadlock, what) {}
};

/// A RateLimiter was asked for permits (or released some) before its rate was set
/// (try_set_rate / set_rate), or after it was removed or its keep-alive ran out.
class REDISYNC_API NotConfiguredError : public Error {
 public:
  explicit NotConfiguredError(const std::string& what) : Error(errc::not_configured, what) {}
};

/// The holder of a non-reentrant lock (NonReentrantLock, NonReentrantFairLock) asked for it
/// again; nothing changed on the server (Java: IllegalMonitorStateException). Waiting would
/// never end, and counting it as a re-entry is what the variant exists to forbid.
class REDISYNC_API ReentryError : public Error {
 public:
  explicit ReentryError(const std::string& what) : Error(errc::reentry_refused, what) {}
};

/// An async wait (async_lock, async_try_lock of the lock kinds, of MultiLock and RedLock) was
/// cancelled through the cancellation slot of its completion handler
/// (asio::bind_cancellation_slot, the awaitable operators, a parallel group) before it
/// acquired: it gave up as a timed-out wait does, and left nothing behind (no queue entry, no
/// registration, no hold; a multi-lock releases the members it had taken). A cancellation
/// that comes after the lock was acquired changes nothing: the wait completes as acquired.
class REDISYNC_API CancelledError : public Error {
 public:
  explicit CancelledError(const std::string& what) : Error(errc::cancelled, what) {}
};

/// The Client was shut down while the call was pending.
class REDISYNC_API ClientClosedError : public Error {
 public:
  explicit ClientClosedError(const std::string& what) : Error(errc::client_closed, what) {}
};

}  // namespace redisync

template <>
struct std::is_error_code_enum<redisync::errc> : std::true_type {};
