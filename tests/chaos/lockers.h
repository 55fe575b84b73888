// SPDX-License-Identifier: Apache-2.0
// The lock kinds a chaos worker runs its sections under (chaos_worker.cpp), behind one
// interface, including the deliberately broken locks of the negative control.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "chaos/worker_common.h"
#include "redisync/redisync.h"

namespace redisync::chaos_worker {

/// One way to enter and leave a critical section. Not thread-safe; one per worker.
struct Locker {
  virtual ~Locker() = default;
  /// Acquires within `wait`: the fencing token (0 when the kind has none), nullopt on timeout.
  /// Throws redisync::Error.
  virtual std::optional<std::uint64_t> try_acquire(Duration wait) = 0;
  /// Releases; throws LockLostError when the hold was lost, NotOwnerError, or another Error
  /// (the worker retries those).
  virtual void unlock() = 0;
  /// The owner field in the lock hash (the permit id for a PermitExpirableSemaphore, "-" when
  /// there is none), after try_acquire().
  virtual std::string field() const = 0;
  /// False for holds that only read the counter (readers, permit holders): several may be
  /// on at once, so a read-modify-write would lose updates by design.
  bool writes = true;
  /// > 0: the hold has this fixed lease, never renewed and never reported by the library
  /// (PermitExpirableSemaphore); the worker tells itself at its local deadline.
  long unreported_lease_ms = 0;
};

/// The Locker of `o.kind` (chaos_worker.cpp lists them) over `clients` (one per --lock-url).
/// Throws std::invalid_argument for an unknown kind.
std::unique_ptr<Locker> make_locker(const Options& o,
                                    std::vector<std::unique_ptr<redisync::Client>>& clients);

}  // namespace redisync::chaos_worker
