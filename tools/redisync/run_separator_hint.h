// SPDX-License-Identifier: Apache-2.0
// The hint for `redisync run NAME cmd --opt`: without "--" the command's own options reach
// run's parser, which refuses them.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace redisync::cli {

/// `words`: the arguments after the program name; `error`: what parsing them threw. Returns a
/// hint to print after CLI11's message when `words` is a `run` without "--" and the parser
/// found words it did not expect; otherwise "".
std::string run_separator_hint(const std::vector<std::string>& words, const CLI::ParseError& error);

}  // namespace redisync::cli
