// The one rule every subcommand applies to the names (and patterns) it is given.
#pragma once

#include <string>

namespace redisync::cli {

/// Throws UsageError (exit 64) "<command>: <what> must not be empty" if `name` is empty. Every
/// command (run, status, unlock, ls, top) calls it before connecting to Redis, so one empty
/// name gives the same answer everywhere. Anything else is passed to the library, which
/// refuses what it cannot store (InvalidArgument, reported with exit 64).
void check_name(const std::string& name, const std::string& command,
                const std::string& what = "the NAME");

}  // namespace redisync::cli
