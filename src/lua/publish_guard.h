// SPDX-License-Identifier: Apache-2.0
// The publish guard in front of an acquire step. A script's own shared sub-steps are declared
// in its Lua file and resolved at build time (cmake/EmbedLua.cmake); this guard is not one of
// them because it depends on the Client's handoff mode (grant mode adds the grant channel's
// check) and its arguments are appended to the step's own.
#pragma once

#include <map>
#include <mutex>
#include <utility>
#include <string>
#include <vector>

#include "lua/scripts.h"

namespace redisync::lua {

/// `body` (any acquire step) with publish_check.lua and publish_guard.lua in front: the
/// acquire step of a kind whose release publishes refuses, before any write, a user who may not
/// publish what that release will (issue 17 item 4). The caller appends publish_guard_args() to the
/// step's ARGV. With `grant`, also grant_publish_guard.lua (the grant channel a grant-mode release
/// publishes on; the caller appends grant_publish_guard_args()). Built once per body and mode; the
/// reference stays valid for the program's lifetime.
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
