#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's two commands in order on one clone, in the same build directory (the demo's
# default is build-demo/, test.sh's build/; a user may give both the same BUILD_DIR):
# `bash scripts/demo.sh` configures it with tests, examples and benchmarks off;
# `bash scripts/test.sh` afterwards must still register (and so run) all of them there, not end
# with "No tests were found". Configure-only (CONFIGURE_ONLY=1) in a
# temporary build directory: no compilation, a few seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$(mktemp -d "${TMPDIR:-/tmp}/redisync-readme-order.XXXXXX")
trap 'rm -rf "$dir"' EXIT

CONFIGURE_ONLY=1 BUILD_DIR="$dir/build" bash scripts/demo.sh
if grep -q '^REDISYNC_BUILD_TESTS:BOOL=ON' "$dir/build/CMakeCache.txt"; then
  echo "readme_order_test: the demo's configuration was expected to turn tests off" >&2
  exit 1
fi
if ! CONFIGURE_ONLY=1 SANITIZERS=0 BUILD_DIR="$dir/build" bash scripts/test.sh; then
  echo "readme_order_test: scripts/test.sh after scripts/demo.sh registers no tests" >&2
  exit 1
fi
# The demo turns examples (and benchmarks) off too; the plain suite runs them.
for w in REDISYNC_BUILD_TESTS:BOOL=ON REDISYNC_BUILD_EXAMPLES:BOOL=ON REDISYNC_BUILD_BENCH:BOOL=ON; do
  if ! grep -qxF "$w" "$dir/build/CMakeCache.txt"; then
    echo "readme_order_test: scripts/test.sh after scripts/demo.sh leaves ${w%%:*} off" >&2
    exit 1
  fi
done
echo "readme_order_test: scripts/test.sh after scripts/demo.sh registers tests, examples included"
