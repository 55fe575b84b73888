# SPDX-License-Identifier: Apache-2.0
# Turns src/lua/*.lua into one generated C++ file of string constants, so scripts live as
# readable Lua files yet ship inside the library. Re-runs when a script is added, removed or
# edited.
#
# A script declares the shared sub-steps it is sent with on a line of its own:
#   --@requires publish_check release_record
# Each named file's text goes in front of the script's own, in the order named, each once
# (a required file's own requirements first), joined by newlines. The embedded constant is
# the whole script, so no C++ call site lists a script's parts.

# Appends to the variable named `text_var` the resolved text of `stem`, unless the list named
# `done_var` holds it already; `path_var` lists the stems being resolved (a cycle is an error).
function(_redisync_lua_resolve dir stem done_var path_var text_var)
  if(stem IN_LIST ${done_var})
    return()
  endif()
  if(stem IN_LIST ${path_var})
    message(FATAL_ERROR "src/lua: ${stem}.lua requires itself (through ${${path_var}})")
  endif()
  if(NOT EXISTS ${dir}/${stem}.lua)
    message(FATAL_ERROR "src/lua: '${stem}' is required (by ${${path_var}}) but there is no "
                        "${stem}.lua")
  endif()
  file(READ ${dir}/${stem}.lua own)
  set(done ${${done_var}})
  set(path ${${path_var}} ${stem})
  set(text "${${text_var}}")
  string(REGEX MATCHALL "(^|\n)--@requires[^\n]*" lines "${own}")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^\n?--@requires" "" names "${line}")
    separate_arguments(names UNIX_COMMAND "${names}")
    foreach(required IN LISTS names)
      if(NOT required IN_LIST done)
        _redisync_lua_resolve(${dir} ${required} done path text)
        string(APPEND text "\n")  # a prelude ends with a newline of its own, then this one
      endif()
    endforeach()
  endforeach()
  list(APPEND done ${stem})
  string(APPEND text "${own}")
  set(${done_var} ${done} PARENT_SCOPE)
  set(${text_var} "${text}" PARENT_SCOPE)
endfunction()

function(redisync_embed_lua out_cpp)
  set(dir ${CMAKE_CURRENT_SOURCE_DIR}/lua)
  file(GLOB lua_files CONFIGURE_DEPENDS ${dir}/*.lua)
  # GLOB's CONFIGURE_DEPENDS notices added and removed files only; listing each script as a
  # configure dependency makes `cmake --build` re-embed a script whose text changed.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${lua_files})
  set(body "// Generated from src/lua/*.lua by cmake/EmbedLua.cmake. Do not edit.\n")
  string(APPEND body "#include \"lua/scripts.h\"\n\nnamespace redisync::lua {\n")
  foreach(f IN LISTS lua_files)
    get_filename_component(stem ${f} NAME_WE)
    set(done "")
    set(path "")
    set(text "")
    _redisync_lua_resolve(${dir} ${stem} done path text)
    string(APPEND body "const Script ${stem}{\"${stem}\", R\"redisync_lua(${text})redisync_lua\"};\n")
  endforeach()
  string(APPEND body "}  // namespace redisync::lua\n")
  file(WRITE ${out_cpp}.tmp "${body}")
  configure_file(${out_cpp}.tmp ${out_cpp} COPYONLY)
endfunction()
