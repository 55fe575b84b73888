// SPDX-License-Identifier: Apache-2.0
#include "net/script_loads.h"

namespace redisync::net {

// An entry per script sent on this connection: `load` is the load the calls now rely on (0:
// none yet, for a script whose SCRIPT LOAD was refused: its next call goes as EVAL, which
// caches it on the server as a load does).

ScriptLoads::Plan ScriptLoads::plan(const std::string& sha) {
  auto [it, added] = known_.try_emplace(sha);
  State& s = it->second;
  if (!added && s.load != 0) return {Send::evalsha, s.load};
  s.load = ++loads_;
  return {s.eval_only ? Send::eval : Send::load_then_evalsha, s.load};
}

void ScriptLoads::missing(const std::string& sha, std::uint64_t load) {
  auto it = known_.find(sha);
  // A NOSCRIPT for a call sent before the latest load says nothing of that load.
  if (it == known_.end() || it->second.load != load) return;
  if (it->second.eval_only) {
    it->second.load = 0;
  } else {
    known_.erase(it);
  }
}

void ScriptLoads::refused(const std::string& sha, std::uint64_t load, bool for_good) {
  auto it = known_.find(sha);
  if (it == known_.end() || it->second.load != load) return;
  if (for_good) {
    it->second.eval_only = true;
    it->second.load = 0;
  } else {
    known_.erase(it);
  }
}

}  // namespace redisync::net
