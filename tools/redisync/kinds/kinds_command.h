// SPDX-License-Identifier: Apache-2.0
// `redisync kinds [--json]`: the kind vocabulary (kinds.h) every other command uses, with the
// earlier spellings each name still accepts.
#pragma once

#include <CLI/CLI.hpp>

namespace redisync::cli {

struct KindsOptions {
  bool json = false;
};

CLI::App* add_kinds_command(CLI::App& app, KindsOptions& options);

int kinds_command(const KindsOptions& options);

}  // namespace redisync::cli
