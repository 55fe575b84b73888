// SPDX-License-Identifier: Apache-2.0
// Which embedded scripts the server behind one connection has been sent (issue 34): the first
// EVALSHA of a script on a connection goes out right behind a SCRIPT LOAD of it, pipelined, so
// a fresh server (or one that restarted, failed over or was SCRIPT FLUSHed) loads each script
// once per connection instead of answering NOSCRIPT to every call in flight. Commands on one
// connection run in order, so the calls sent behind a load find the script without waiting
// for its reply.
//
// Pure bookkeeping, no I/O: the Executor decides with it (request_delivery.cpp); a Connection
// forgets it whenever its socket goes (the next one may reach another server).
//
// Threading: io thread only, like Connection.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

namespace redisync::net {

class ScriptLoads {
 public:
  /// How to send a call of a script now.
  enum class Send {
    evalsha,            ///< loaded (or a load is on its way ahead of this call)
    load_then_evalsha,  ///< send SCRIPT LOAD first, then EVALSHA behind it
    eval,  ///< SCRIPT LOAD is refused here (ACL): send the source with EVAL, which loads it
  };
  struct Plan {
    Send send;
    /// Which load this call relies on: a NOSCRIPT or a refusal for an older one says
    /// nothing of the newer one.
    std::uint64_t load;
  };

  /// What a call of the script with this SHA sends now. load_then_evalsha counts the load as
  /// sent: the calls planned after it rely on it.
  Plan plan(const std::string& sha);
  /// The server answered NOSCRIPT to a call that relied on `load`: it has lost its scripts
  /// (SCRIPT FLUSH); the next call loads it again (once, however many calls heard NOSCRIPT).
  void missing(const std::string& sha, std::uint64_t load);
  /// SCRIPT LOAD `load` was answered with an error. `for_good` (NOPERM: the user may not
  /// load scripts): until the connection is made again, a script is loaded by sending its
  /// next call as EVAL (the server caches it as a load does); else the next call tries a
  /// SCRIPT LOAD again.
  void refused(const std::string& sha, std::uint64_t load, bool for_good);
  /// Forgets everything (a new socket, maybe to another server).
  void clear() { known_.clear(); }

  /// Loads planned so far, by SCRIPT LOAD or by EVAL (for tests).
  std::uint64_t loads() const { return loads_; }

 private:
  struct State {
    std::uint64_t load = 0;  ///< the load calls rely on; 0: none (send the next as EVAL)
    bool eval_only = false;  ///< SCRIPT LOAD refused (NOPERM): loaded by an EVAL instead
  };
  std::unordered_map<std::string, State> known_;
  std::uint64_t loads_ = 0;  // also numbers the loads: never reset
};

}  // namespace redisync::net
