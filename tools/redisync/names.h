// SPDX-License-Identifier: Apache-2.0
// The one rule every subcommand applies to the names (and patterns) it is given.
#pragma once

#include <string>
#include <string_view>

namespace redisync::cli {

/// Throws UsageError (exit 64) "<command>: <what> must not be empty" if `name` is empty. Every
/// command (run, status, unlock, ls, top) calls it before connecting to Redis, so one empty
/// name gives the same answer everywhere. Anything else is passed to the library, which
/// refuses what it cannot store (InvalidArgument, reported with exit 64).
void check_name(const std::string& name, const std::string& command,
                const std::string& what = "the NAME");

/// `text` made safe to print as one line on a terminal: a backslash becomes "\\", a newline
/// "\n" (kept as it is with keep_newlines), a tab "\t", a carriage return "\r", and every other
/// control byte (C0, DEL, and C1 as UTF-8 encodes it) "\xNN". Everything else, UTF-8 included,
/// is kept. Names and owner fields come from whoever can write keys: raw, a newline forges a
/// row of `ls` and an escape sequence reaches the operator's terminal. Text output applies it
/// to every cell and diagnostics to every message; --json does not (JSON escapes those bytes).
std::string printable(std::string_view text, bool keep_newlines = false);

/// printable(text) with each space as "\x20" too: one word of a row whose columns are
/// separated by spaces (`ls`: a name "a b" raw reads as a name "a" and a next column "b").
/// A backslash is already "\\", so the escape cannot be forged by a name.
std::string printable_word(std::string_view text);

}  // namespace redisync::cli
