#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds redisync into BUILD_DIR (default build/). Extra args go to cmake.
# CONFIGURE_ONLY=1 stops after configuring (tests/scripts/readme_order_test.sh uses it).
# TARGETS="a b": build only those targets (default: all).
# BUILD_JOBS=N: compile jobs (default: one per core).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
args=()

# Ninja where installed, unless the directory was configured with another generator already
# (cmake refuses to switch generators in place).
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then
  args+=(-G Ninja)
fi

if command -v ccache >/dev/null 2>&1 && [ "${REDISYNC_CCACHE:-1}" != 0 ]; then
  # A compiler cache keyed on paths relative to the clone's parent folder: a rebuild, or a
  # fresh clone at another path on the same machine, reuses what compiled before. The settings
  # travel in the launcher itself, so a later plain `cmake --build` caches the same way.
  # GCC's precompiled headers are not reproducible (two builds of one header differ), and
  # ccache hashes them into every key: with a PCH nothing would hit after a fresh configure.
  # So with ccache the heavy headers are shared by unity batches instead (REDISYNC_UNITY).
  base=${CCACHE_BASEDIR:-$(cd .. && pwd)}
  launcher="/usr/bin/env;CCACHE_BASEDIR=$base;CCACHE_NOHASHDIR=1"
  launcher+=";CCACHE_SLOPPINESS=time_macros,include_file_mtime,include_file_ctime"
  launcher+=";CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-20G};ccache"
  args+=("-DCMAKE_CXX_COMPILER_LAUNCHER=$launcher" "-DCMAKE_C_COMPILER_LAUNCHER=$launcher"
         -DREDISYNC_PCH=OFF)
fi
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "${args[@]}" "$@" \
  >/dev/null
if [ "${CONFIGURE_ONLY:-0}" = 1 ]; then exit 0; fi
targets=()
for t in ${TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$BUILD_DIR" -j"${BUILD_JOBS:-$(nproc)}" "${targets[@]}"
