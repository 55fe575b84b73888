// SPDX-License-Identifier: Apache-2.0
// What `redisync run` holds while its command runs, one class per kind of hold: a lock of any
// kind (--fair, --read, --write, --fenced, default plain lock), several at once (--multi), or
// one permit of a semaphore (--semaphore N). The Runner (run_command.cpp) only talks to this
// interface, so a new kind is one more class here and one more flag there.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kinds.h"
#include "redisync/client.h"
#include "redisync/config.h"

namespace redisync::cli {

enum class HoldKind { lock, fair, read, write, fenced, semaphore, multi };

/// Its kind in the CLI's vocabulary (semaphore: a permit-expirable-semaphore).
Kind kind_of(HoldKind kind);
/// The hold `run` makes for `kind`; nullopt for a kind `run` cannot hold.
std::optional<HoldKind> hold_kind_of(Kind kind);

struct HoldSpec {
  HoldKind kind = HoldKind::lock;
  std::vector<std::string> names;        ///< one name; several for multi
  HoldKind member_kind = HoldKind::lock;  ///< multi: each member's kind (lock, fair, read, write)
  std::int64_t permits = 0;              ///< semaphore: the total N (> 0)
};

class Holding {
 public:
  using SteadyClock = std::chrono::steady_clock;
  using AcquireDone = std::function<void(std::exception_ptr, bool acquired)>;
  using ReleaseDone = std::function<void(std::exception_ptr)>;

  virtual ~Holding() = default;
  /// "lock x", "fair lock x", "read lock x", "locks a, b", "semaphore x (one of 3 permits)".
  virtual std::string describe() const = 0;
  /// Runs on the main thread before the acquisition (semaphore: sets up the permit count).
  virtual void prepare() {}
  /// Starts the acquisition. wait nullopt: no limit; 0: one attempt. lease 0: watchdog lease,
  /// renewed while held. `done` runs on the Client's I/O thread.
  virtual void start_acquire(std::optional<Duration> wait, Duration lease, AcquireDone done) = 0;
  /// Starts the release; `done` gets LockLostError / NotOwnerError / UnknownPermitError when
  /// the hold turned out lost.
  virtual void start_release(ReleaseDone done) = 0;
  /// After an acquisition ended "not acquired": why, if it was not contention alone (a
  /// multi-lock's members that timed out, were unreachable or failed), and the exit code that
  /// goes with it; "" otherwise.
  virtual std::string why_not_acquired(int* /*exit_code*/) const { return {}; }
  /// Main thread, once acquired, before the command starts (semaphore: first renewal).
  virtual void after_acquire() {}
  /// "NAME=value" entries for the command's environment (fenced: REDISYNC_FENCING_TOKEN).
  virtual std::vector<std::string> environment() const { return {}; }
  /// Holds the Client does not renew itself (semaphore permits): when the main loop must call
  /// renew() next; nullopt: never.
  virtual std::optional<SteadyClock::time_point> next_renewal() const { return std::nullopt; }
  /// Renews (blocking). Returns why the hold is lost, or "" if it is still held.
  virtual std::string renew() { return {}; }
};

/// The owner id every lock kind writes is `owner` (lost-lock events carry it).
/// Throws InvalidArgument / UsageError for names the library refuses.
std::unique_ptr<Holding> make_holding(Client& client, const HoldSpec& spec, std::int64_t owner);

/// Whether an error from start_release means "the hold was lost" (and not "unreachable").
bool is_lost_error(const std::exception_ptr& error);

/// The environment variable carrying the fencing token to the command (--fenced).
inline constexpr const char* kFencingTokenEnv = "REDISYNC_FENCING_TOKEN";

}  // namespace redisync::cli
