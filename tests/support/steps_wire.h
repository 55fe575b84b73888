// SPDX-License-Identifier: Apache-2.0
// What the unit tests pinning an acquisition record's requests share (hash_lock_steps_test,
// fair_lock_steps_test, rw_lock_steps_test): a Client that never connects (nothing is sent),
// and a kind for the records' bookkeeping, which their keys and arguments never consult.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "redisync/config.h"
#include "sync/client_core.h"
#include "sync/locks/lock_kind.h"

namespace redisync::test {

class RecordTestKind final : public detail::HashLockKind {
 public:
  std::string noun() const override { return "lock"; }
  void start_loop(const std::shared_ptr<detail::ClientCore>&, const std::string&, std::int64_t,
                  detail::LoopStart) const override {}
};

/// A Client core in `handoff` mode, with `starvation_guard` when given, that never connects.
inline std::shared_ptr<detail::ClientCore> unconnected_core(
    Handoff handoff, std::optional<Duration> starvation_guard = std::nullopt) {
  Config config = Config::from_url("redis://127.0.0.1:1");
  config.handoff = handoff;
  if (starvation_guard) config.starvation_guard = *starvation_guard;
  return std::make_shared<detail::ClientCore>(config);
}

}  // namespace redisync::test
