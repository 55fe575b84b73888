// SPDX-License-Identifier: Apache-2.0
// Where run's options end and the command begins. `redisync run NAME CMD ARGS...` reads as
// flock(1) and sudo do: the command's own options (`grep -v x`) are its, never run's, even
// without "--". With --multi the names run on until "--", so only there is "--" needed, and
// its absence gets a hint.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace redisync::cli {

/// `words`: the arguments after the program name. For a `run` without "--" whose words name
/// one lock (no --multi), returns them with "--" put before the command's first word: the
/// second word that is neither one of `run`'s options nor an option's value. Anything else
/// is returned as it is.
std::vector<std::string> with_run_separator(const CLI::App& run, std::vector<std::string> words);

/// `words`: the arguments after the program name; `error`: what parsing them threw. Returns a
/// hint to print after CLI11's message when `words` is a `run` without "--" (so one with
/// --multi: see with_run_separator) and the parser found words it did not expect; otherwise "".
std::string run_separator_hint(const std::vector<std::string>& words, const CLI::ParseError& error);

}  // namespace redisync::cli
