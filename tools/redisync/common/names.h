// SPDX-License-Identifier: Apache-2.0
// The one rule every subcommand applies to the names (and patterns) it is given.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "json_writer.h"

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

/// Lower-case hex of every byte ("a\xff" -> "61ff"): a name's exact bytes in --json
/// ("name_hex"), whatever they are.
std::string name_hex(std::string_view bytes);

/// Writes a name's fields of a --json object: "name" when its bytes are UTF-8 (JSON carries
/// them exactly), and "name_hex" always (any bytes; `status` and `unlock` take it back as
/// --name-hex).
void write_name_fields(JsonWriter& w, std::string_view name);

/// Adds the NAME positional and --name-hex HEX to `command` (status, unlock).
void add_name_options(CLI::App& command, std::string& name, std::optional<std::string>& hex);

/// The name given to `command`: NAME, or the bytes --name-hex spells (two hex digits a byte).
/// Throws UsageError when neither or both are given, or the hex is not hex, before anything
/// connects.
std::string given_name(const std::string& name, const std::optional<std::string>& hex,
                       const std::string& command);

/// printable(text) with each space as "\x20" too: one word of a row whose columns are
/// separated by spaces (`ls`: a name "a b" raw reads as a name "a" and a next column "b").
/// A backslash is already "\\", so the escape cannot be forged by a name.
std::string printable_word(std::string_view text);

}  // namespace redisync::cli
