// SPDX-License-Identifier: Apache-2.0
// The man page and the bash completion, written from the CLI11 App tree itself (the options
// every command really has), by the hidden `redisync --generate-man` and
// `redisync --generate-completion bash`. The checked-in copies (tools/redisync/share/) are
// compared with a fresh run in CI (tests/scripts/cli_docs_test.sh): an option added without
// regenerating fails.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace redisync::cli {

/// redisync(1) in roff: the description, then each visible command with its options and
/// footer (hidden commands and options, group "", are left out).
std::string render_man_page(const CLI::App& app);

/// A bash completion script: command names, then each command's options.
std::string render_bash_completion(const CLI::App& app);

}  // namespace redisync::cli
