// SPDX-License-Identifier: Apache-2.0
// What a test server says about the traffic it saw: command counts and pub/sub channels.
#pragma once

#include <string>

#include "support/redis_server.h"

namespace redisync::test {

/// A field of INFO <section>, or of CLUSTER INFO for section "cluster"; "" when absent.
inline std::string info_field(RedisServer& server, const std::string& section,
                              const std::string& field) {
  const std::string text = section == "cluster"
                               ? server.command({"CLUSTER", "INFO"}).as_string()
                               : server.command({"INFO", section}).as_string();
  const auto pos = text.find(field + ":");
  if (pos == std::string::npos) return "";
  const auto end = text.find('\r', pos);
  return text.substr(pos + field.size() + 1, end - pos - field.size() - 1);
}

/// Calls of `command` (lower case, e.g. "evalsha", "del") since the server started (INFO
/// commandstats).
inline long long command_calls(RedisServer& server, const std::string& command) {
  const std::string info = server.command({"INFO", "commandstats"}).as_string();
  const std::string key = "cmdstat_" + command + ":calls=";
  const auto pos = info.find(key);
  if (pos == std::string::npos) return 0;
  return std::stoll(info.substr(pos + key.size()));
}

inline long long evalsha_calls(RedisServer& server) { return command_calls(server, "evalsha"); }

/// True when no client is subscribed to any channel (PUBSUB CHANNELS is empty).
inline bool no_channels(RedisServer& server) {
  return server.command({"PUBSUB", "CHANNELS"}).elements.empty();
}

/// Subscribers of `channel` (PUBSUB NUMSUB).
inline long long subscribers(RedisServer& server, const std::string& channel) {
  auto r = server.command({"PUBSUB", "NUMSUB", channel});
  return r.elements.size() == 2 ? r.elements[1].as_integer() : 0;
}

/// True when someone is subscribed to `channel`.
inline bool subscribed_to(RedisServer& server, const std::string& channel) {
  return subscribers(server, channel) > 0;
}

/// The server's clock (TIME) in ms since the epoch.
inline long long server_now_ms(RedisServer& server) {
  const auto t = server.command({"TIME"});
  return std::stoll(t.elements.at(0).as_string()) * 1000 +
         std::stoll(t.elements.at(1).as_string()) / 1000;
}

}  // namespace redisync::test
