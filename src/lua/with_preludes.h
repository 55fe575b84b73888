// SPDX-License-Identifier: Apache-2.0
// A script sent with shared sub-steps in front: the preludes define local functions (e.g.
// publish_check.lua's publish_refused) that the body calls, so one check lives in one file.
#pragma once

#include <map>
#include <mutex>
#include <utility>
#include <string>
#include <vector>

#include "lua/scripts.h"

namespace redisync::lua {

/// The script `Preludes... Body` (in that order, joined by newlines), named as Body. Built
/// once; the reference stays valid for the program's lifetime.
template <const Script& Body, const Script&... Preludes>
const Script& with_preludes() {
  static const std::string source =
      ((std::string(Preludes.source) + "\n") + ... + std::string(Body.source));
  static const Script script{Body.name, source};
  return script;
}

/// Body with publish_check.lua in front (scripts that write, then publish).
template <const Script& Body>
const Script& with_publish_check() {
  return with_preludes<Body, publish_check>();
}

/// A recorded step that publishes (semaphore release, latch count-down): publish_check.lua and
/// refused_or_recorded.lua in front.
template <const Script& Body>
const Script& with_recorded_publish() {
  return with_preludes<Body, publish_check, refused_or_recorded>();
}

/// A "try set" script (a count set only when absent, then announced): publish_check.lua,
/// `Shared...` (the kind's own sub-steps) and set_count_if_absent.lua in front.
template <const Script& Body, const Script&... Shared>
const Script& with_set_count_if_absent() {
  return with_preludes<Body, publish_check, Shared..., set_count_if_absent>();
}

/// `body` (any script, also one composed at run time) with publish_check.lua and
/// publish_guard.lua in front: the acquire step of a kind whose release publishes refuses,
/// before any write, a user who may not publish what that release will (issue 17 item 4).
/// The caller appends publish_guard_args() to the step's ARGV. With `grant`, also
/// grant_publish_guard.lua (the grant channel a grant-mode release publishes on; the caller
/// appends grant_publish_guard_args()). Built once per body and mode; the reference stays
/// valid for the program's lifetime.
inline const Script& with_publish_guard(const Script& body, bool grant = false) {
  struct Entry {
    std::string source;
    Script script;
  };
  static std::mutex mutex;
  static std::map<std::pair<const void*, bool>, Entry> built;  // by body text; nodes never move
  std::lock_guard lock(mutex);
  auto [it, fresh] = built.try_emplace({body.source.data(), grant});
  if (fresh) {
    it->second.source = std::string(publish_check.source) + "\n" +
                        std::string(publish_guard.source) + "\n" +
                        (grant ? std::string(grant_publish_guard.source) + "\n" : std::string()) +
                        std::string(body.source);
    it->second.script = Script{body.name, it->second.source};
  }
  return it->second.script;
}

/// `args` followed by what publish_guard.lua reads last: the publish command and the channel
/// the step's release publishes on.
inline std::vector<std::string> publish_guard_args(std::vector<std::string> args,
                                                   const std::string& command,
                                                   const std::string& channel) {
  args.reserve(args.size() + 2);
  args.push_back(command);
  args.push_back(channel);
  return args;
}

/// `args` followed by what grant_publish_guard.lua and publish_guard.lua read last: the grant
/// channel, the publish command and the lock channel.
inline std::vector<std::string> grant_publish_guard_args(std::vector<std::string> args,
                                                         const std::string& command,
                                                         const std::string& grant_channel,
                                                         const std::string& channel) {
  args.push_back(grant_channel);
  return publish_guard_args(std::move(args), command, channel);
}

}  // namespace redisync::lua
