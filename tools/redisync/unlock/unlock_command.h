// SPDX-License-Identifier: Apache-2.0
// `redisync unlock --force NAME`: delete a lock whoever holds it.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace redisync::cli {

struct UnlockOptions {
  std::string redis_url;
  std::string name;
  std::optional<std::string> name_hex;  ///< --name-hex: the name's bytes, instead of NAME
  bool force = false;
};

CLI::App* add_unlock_command(CLI::App& app, UnlockOptions& options);

/// Prints "released" or "was not locked"; 0. Without --force: usage error (64).
int unlock_command(const UnlockOptions& options);

}  // namespace redisync::cli
