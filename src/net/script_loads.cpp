#include "net/script_loads.h"

namespace redisync::net {

ScriptLoads::Plan ScriptLoads::plan(const std::string& sha) {
  auto [it, added] = known_.try_emplace(sha);
  if (!added) return {it->second.eval_only ? Send::eval : Send::evalsha, it->second.load};
  it->second.load = ++loads_;
  return {Send::load_then_evalsha, it->second.load};
}

void ScriptLoads::missing(const std::string& sha, std::uint64_t load) {
  auto it = known_.find(sha);
  // A NOSCRIPT for a call sent before the latest load says nothing of that load.
  if (it != known_.end() && it->second.load == load && !it->second.eval_only) known_.erase(it);
}

void ScriptLoads::refused(const std::string& sha, std::uint64_t load, bool for_good) {
  auto it = known_.find(sha);
  if (it == known_.end() || it->second.load != load) return;
  if (for_good) {
    it->second.eval_only = true;
  } else {
    known_.erase(it);
  }
}

}  // namespace redisync::net
