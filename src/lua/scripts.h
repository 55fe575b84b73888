// The Lua scripts of src/lua/*.lua, embedded at build time (cmake/EmbedLua.cmake).
// Each atomic step of a primitive is one script, run by EVALSHA (see net/executor.h).
#pragma once

#include <string_view>

namespace redisync::lua {

/// One embedded script: a stable name (the file's stem) and its source text.
struct Script {
  std::string_view name;
  std::string_view source;
};

// One declaration per file in src/lua/; the definitions are generated.
extern const Script lock_acquire;
extern const Script lock_release;
extern const Script lock_force_release;
extern const Script lock_renew;

}  // namespace redisync::lua
