// SPDX-License-Identifier: Apache-2.0
// Exit codes of the redisync CLI and the exception that carries one to main().
#pragma once

#include <stdexcept>
#include <string>

#include "redisync/multi_lock.h"

namespace redisync::cli {

// sysexits.h values where one fits, so scripts can tell the cases apart.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 64;        // EX_USAGE: bad flags or arguments
inline constexpr int kExitUnavailable = 69;  // EX_UNAVAILABLE: Redis (or redis-server) unreachable
inline constexpr int kExitOsError = 71;      // EX_OSERR: fork, pipe, signalfd failed
inline constexpr int kExitNotAcquired = 75;  // EX_TEMPFAIL: lock not acquired within --wait
inline constexpr int kExitLockLost = 76;     // EX_PROTOCOL: the lock was lost while held
inline constexpr int kExitAuthFailed = 77;   // EX_NOPERM: Redis refused the credentials
inline constexpr int kExitCannotExecute = 126;
inline constexpr int kExitNotFound = 127;

/// Ends the current command: main() prints "redisync: <what>" on stderr and exits with
/// exit_code().
class CliError : public std::runtime_error {
 public:
  CliError(int exit_code, const std::string& what)
      : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

/// A usage error (exit 64).
class UsageError : public CliError {
 public:
  explicit UsageError(const std::string& what) : CliError(kExitUsage, what) {}
};

/// Call inside a catch block: prints the in-flight exception as "redisync: <message>" on
/// stderr and returns the exit code it maps to (CliError: its own; ConfigError and
/// InvalidArgument (a name or value the library refuses): 64; AuthError (wrong or missing
/// password or user): 77; ConnectionError / TimeoutError: 69; MultiLockError:
/// multi_lock_exit_code; anything else: 1).
int report_current_exception() noexcept;

/// The exit code of a multi-lock attempt that failed on its members, as for one lock: 77 when
/// every failed member's server refused the credentials, 69 when one was unreachable or timed
/// out, else 1 (a member's server answered with an error, e.g. WRONGTYPE).
int multi_lock_exit_code(const AttemptReport& report);

/// Prints "redisync: <message>" on stderr.
void print_diagnostic(const std::string& message);

}  // namespace redisync::cli
