# SPDX-License-Identifier: Apache-2.0
# Turns src/lua/*.lua into one generated C++ file of string constants, so scripts live as
# readable Lua files yet ship inside the library. Re-runs when a script is added, removed or
# edited.
function(redisync_embed_lua out_cpp)
  file(GLOB lua_files CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/lua/*.lua)
  # GLOB's CONFIGURE_DEPENDS notices added and removed files only; listing each script as a
  # configure dependency makes `cmake --build` re-embed a script whose text changed.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${lua_files})
  set(body "// Generated from src/lua/*.lua by cmake/EmbedLua.cmake. Do not edit.\n")
  string(APPEND body "#include \"lua/scripts.h\"\n\nnamespace redisync::lua {\n")
  foreach(f IN LISTS lua_files)
    get_filename_component(stem ${f} NAME_WE)
    file(READ ${f} text)
    string(APPEND body "const Script ${stem}{\"${stem}\", R\"redisync_lua(${text})redisync_lua\"};\n")
  endforeach()
  string(APPEND body "}  // namespace redisync::lua\n")
  file(WRITE ${out_cpp}.tmp "${body}")
  configure_file(${out_cpp}.tmp ${out_cpp} COPYONLY)
endfunction()
