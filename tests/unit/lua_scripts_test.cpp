// SPDX-License-Identifier: Apache-2.0
// The embedded scripts are whole: the shared sub-steps a Lua file names on its `--@requires`
// line are in front of its own text, in the order named, each once (cmake/EmbedLua.cmake).
// A call site sends lua::X as it is, so a missing or misplaced sub-step would be a script that
// calls an undefined function on the server.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "lua/scripts.h"

namespace lua = redisync::lua;

namespace {

std::size_t count_of(std::string_view text, std::string_view part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string_view::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// `script` is `parts` joined by newlines, the script's own file text last.
void expect_made_of(const lua::Script& script, std::initializer_list<const lua::Script*> parts) {
  std::string_view rest = script.source;
  for (const lua::Script* part : parts) {
    ASSERT_TRUE(rest.starts_with(part->source)) << script.name << " lacks " << part->name;
    rest.remove_prefix(part->source.size());
    ASSERT_TRUE(rest.starts_with("\n")) << script.name << ": " << part->name;
    rest.remove_prefix(1);
  }
  EXPECT_NE(rest.find("--@requires"), std::string_view::npos) << script.name;
}

}  // namespace

TEST(LuaScripts, RequiredSubStepsComeFirstInTheOrderNamed) {
  expect_made_of(lua::lock_release, {&lua::publish_check, &lua::release_record});
  expect_made_of(lua::lock_grant_release, {&lua::release_record, &lua::grant_pass_on});
  expect_made_of(lua::semaphore_release, {&lua::publish_check, &lua::refused_or_recorded});
  expect_made_of(lua::permit_expirable_semaphore_try_set_permits,
                 {&lua::publish_check, &lua::permit_expirable_semaphore_common,
                  &lua::set_count_if_absent});
  expect_made_of(lua::rate_limiter_acquire, {&lua::rate_limiter_window});
}

TEST(LuaScripts, ARequiredScriptBringsItsOwnSubStepsOnce) {
  // fair_lock_acquire.lua requires fair_lock_dead_heads.lua, which the grant step names first:
  // the dead-heads text is there once, ahead of the grant helpers.
  const std::string_view grant = lua::fair_lock_grant_acquire.source;
  EXPECT_EQ(count_of(grant, lua::fair_lock_dead_heads.source), 1u);
  expect_made_of(lua::fair_lock_grant_acquire,
                 {&lua::fair_lock_dead_heads, &lua::grant_pass_on, &lua::fair_grant_pass_on});
  EXPECT_NE(grant.find("-- Fair lock acquire"), std::string_view::npos);

  // The non-reentrant step: the guard, then the whole fair step (its dead-heads text in it).
  expect_made_of(lua::non_reentrant_fair_lock_acquire,
                 {&lua::non_reentrant_guard, &lua::fair_lock_acquire});
  expect_made_of(lua::non_reentrant_lock_acquire, {&lua::non_reentrant_guard, &lua::lock_acquire});
}

TEST(LuaScripts, AScriptWithoutRequirementsIsItsFileAlone) {
  EXPECT_TRUE(lua::lock_acquire.source.starts_with("-- SPDX-License-Identifier"));
  EXPECT_EQ(count_of(lua::lock_acquire.source, "-- SPDX-License-Identifier"), 1u);
  EXPECT_EQ(lua::lock_acquire.name, "lock_acquire");
  EXPECT_EQ(lua::non_reentrant_lock_acquire.name, "non_reentrant_lock_acquire");
}
