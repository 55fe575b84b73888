#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages redisync needs, if any are missing.
#
#   scripts/deps.sh          everything: build, test, benchmark, run (scripts/test.sh)
#   scripts/deps.sh demo     only what scripts/demo.sh needs: a compiler, CMake, the library's
#                            and the CLI's headers, and redis-server
#   scripts/deps.sh --list [demo]   print the package names instead of installing them
set -euo pipefail

DEMO_PACKAGES=(build-essential cmake pkg-config libasio-dev libhiredis-dev libssl-dev
               libcli11-dev redis-server ninja-build mold)
TEST_PACKAGES=(libgtest-dev libgmock-dev libbenchmark-dev redis-sentinel redis-tools
               openssl procps python3 util-linux tmux faketime prometheus-cpp-dev prometheus ccache
               groff-base bsdextrautils)
# ninja-build, mold: a faster build and link (scripts/build.sh, CMakeLists.txt); ccache:
# rebuilds (three build directories, repeated runs) reuse compiled objects; tmux: the
# `redisync top` test; faketime: the client clock-jump test; groff-base, bsdextrautils (col):
# the man page's check (tests/scripts/cli_docs_test.sh).
# prometheus-cpp-dev: the optional exporter (REDISYNC_PROMETHEUS, on in scripts/test.sh's plain
# build); prometheus: its promtool checks the exposition in a test (and, on a systemd host,
# starts a Prometheus server on :9090: one reason the demo does not install it).

list=0
if [ "${1:-}" = --list ]; then list=1; shift; fi
case "${1:-all}" in
  demo) PACKAGES=("${DEMO_PACKAGES[@]}") ;;
  all) PACKAGES=("${DEMO_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
  *) echo "usage: scripts/deps.sh [--list] [demo|all]" >&2; exit 64 ;;
esac
if [ $list = 1 ]; then printf '%s\n' "${PACKAGES[@]}"; exit 0; fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "scripts/deps.sh: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Debian's package starts a redis-server on 6379 where systemd runs; the tests never use it.
