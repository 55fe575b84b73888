// SPDX-License-Identifier: Apache-2.0
// The --redis URL option shared by the subcommands that talk to Redis.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "redisync/config.h"

namespace redisync::cli {

inline constexpr const char* kDefaultRedisUrl = "redis://127.0.0.1:6379";
inline constexpr const char* kRedisUrlEnv = "REDISYNC_URL";

/// Adds "--redis URL" to `app`: default $REDISYNC_URL, then redis://127.0.0.1:6379.
CLI::Option* add_redis_option(CLI::App& app, std::string& url);

/// Config::from_url(url); an invalid URL is a usage error (exit 64) naming --redis.
Config config_from_url(const std::string& url);

/// TAG(N) of docs/wire-format.md §1.1: "{N}" unless N already contains '{'.
std::string hash_tag(const std::string& name);

}  // namespace redisync::cli
