// SPDX-License-Identifier: Apache-2.0
// REDISYNC_API marks what libredisync.so exports: the classes, exception types and functions a
// program may call, catch, derive from or take the address of. The library is compiled with
// hidden visibility (src/CMakeLists.txt), so everything else, its internals and the Asio code
// it instantiates, stays inside the shared library. tests/scripts/exported_symbols.sh checks
// the exported set.
//
// The static library defines REDISYNC_STATIC for itself and its consumers (the CMake target and
// redisync.pc carry it): there the macro is empty, and a program linking the archive into a
// shared library of its own does not re-export redisync from it.
#pragma once

#if defined(REDISYNC_STATIC)
#define REDISYNC_API
#else
#define REDISYNC_API __attribute__((visibility("default")))
#endif
