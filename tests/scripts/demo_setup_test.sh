#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's first command stays quick: scripts/demo.sh installs only the demo's packages
# (no test, benchmark or Prometheus packages) and configures a Release build (no debug info)
# of the library and the CLI alone. Configure-only in a temporary directory: a few seconds.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=$(mktemp -d "${TMPDIR:-/tmp}/redisync-demo-setup.XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "demo_setup_test: $*" >&2; exit 1; }

grep -q '^bash scripts/deps.sh demo$' scripts/demo.sh || fail "scripts/demo.sh does not run 'scripts/deps.sh demo'"
demo=$(bash scripts/deps.sh --list demo)
for p in libgtest-dev libgmock-dev libbenchmark-dev prometheus prometheus-cpp-dev tmux faketime; do
  if grep -qx "$p" <<<"$demo"; then fail "the demo's packages include $p"; fi
done
for p in redis-server libcli11-dev libhiredis-dev cmake; do
  grep -qx "$p" <<<"$demo" || fail "the demo's packages lack $p"
done
all=$(bash scripts/deps.sh --list)
for p in $demo libgtest-dev prometheus; do
  grep -qx "$p" <<<"$all" || fail "scripts/deps.sh (all) lacks $p"
done

CONFIGURE_ONLY=1 BUILD_DIR="$dir/build" bash scripts/demo.sh
cache="$dir/build/CMakeCache.txt"
want=(CMAKE_BUILD_TYPE:STRING=Release "CMAKE_CXX_FLAGS_RELEASE:STRING=-O2 -DNDEBUG"
      REDISYNC_BUILD_TOOLS:BOOL=ON REDISYNC_BUILD_TESTS:BOOL=OFF REDISYNC_BUILD_BENCH:BOOL=OFF
      REDISYNC_BUILD_EXAMPLES:BOOL=OFF REDISYNC_PROMETHEUS:BOOL=OFF)
for w in "${want[@]}"; do
  grep -qxF "$w" "$cache" || fail "the demo's configuration lacks $w (has: $(grep "^${w%%:*}:" "$cache"))"
done
echo "demo_setup_test: the demo installs ${demo//$'\n'/ } and builds the library and CLI (Release -O2)"
