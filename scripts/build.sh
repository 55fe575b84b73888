#!/usr/bin/env bash
# Configures and builds redisync into BUILD_DIR (default build/). Extra args go to cmake.
# CONFIGURE_ONLY=1 stops after configuring (tests/scripts/readme_order_test.sh uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
if [ "${CONFIGURE_ONLY:-0}" = 1 ]; then exit 0; fi
cmake --build "$BUILD_DIR" -j"$(nproc)"
