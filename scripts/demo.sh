#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's demo command: installs what is missing, builds, and runs `redisync demo`:
# 8 processes contend for one lock on a private redis-server, one holder is SIGKILLed
# mid-hold, and the summary shows 0 lost updates and the handoff to a waiting process.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
BUILD_DIR=${BUILD_DIR:-build} bash scripts/build.sh -DREDISYNC_BUILD_TESTS=OFF -DREDISYNC_BUILD_BENCH=OFF
if [ "${CONFIGURE_ONLY:-0}" = 1 ]; then exit 0; fi
exec "${BUILD_DIR:-build}/tools/redisync/redisync" demo "$@"
