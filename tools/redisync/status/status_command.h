// SPDX-License-Identifier: Apache-2.0
// `redisync status NAME [--json]`: what Redis holds under a lock or synchronizer name.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "redisync/client.h"
#include "status_report.h"

namespace redisync::cli {

struct StatusOptions {
  std::string redis_url;
  std::string name;
  std::optional<std::string> name_hex;  ///< --name-hex: the name's bytes, instead of NAME
  bool json = false;
};

CLI::App* add_status_command(CLI::App& app, StatusOptions& options);

/// Prints the report; 0 also when nothing is there. Throws (69 when Redis is unreachable).
int status_command(const StatusOptions& options);

/// Reads the keys of `name` (wire-format layout) and interprets them.
StatusReport inspect(Client& client, const std::string& name);

}  // namespace redisync::cli
