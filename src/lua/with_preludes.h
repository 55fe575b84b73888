// A script sent with shared sub-steps in front: the preludes define local functions (e.g.
// publish_check.lua's publish_refused) that the body calls, so one check lives in one file.
#pragma once

#include <string>

#include "lua/scripts.h"

namespace redisync::lua {

/// The script `Preludes... Body` (in that order, joined by newlines), named as Body. Built
/// once; the reference stays valid for the program's lifetime.
template <const Script& Body, const Script&... Preludes>
const Script& with_preludes() {
  static const std::string source =
      ((std::string(Preludes.source) + "\n") + ... + std::string(Body.source));
  static const Script script{Body.name, source};
  return script;
}

/// Body with publish_check.lua in front (scripts that write, then publish).
template <const Script& Body>
const Script& with_publish_check() {
  return with_preludes<Body, publish_check>();
}

}  // namespace redisync::lua
