#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds redisync into BUILD_DIR (default build/). Extra args go to cmake.
# CONFIGURE_ONLY=1 stops after configuring (tests/scripts/readme_order_test.sh uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
launcher=()
if command -v ccache >/dev/null 2>&1 && [ "${REDISYNC_CCACHE:-1}" != 0 ]; then
  # A compiler cache keyed on paths relative to the clone's parent folder: a rebuild, or a
  # fresh clone at another path on the same machine, reuses what compiled before. PCH and
  # debug info would otherwise defeat it (sloppiness, no working-directory hash).
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(cd .. && pwd)} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
  export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-20G}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "${launcher[@]}" "$@" >/dev/null
if [ "${CONFIGURE_ONLY:-0}" = 1 ]; then exit 0; fi
cmake --build "$BUILD_DIR" -j"$(nproc)"
