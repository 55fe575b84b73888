#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages redisync needs to build, test and run, if any are missing.
set -euo pipefail

PACKAGES=(build-essential cmake pkg-config libasio-dev libhiredis-dev libssl-dev libcli11-dev
          libgtest-dev libgmock-dev libbenchmark-dev redis-server redis-sentinel redis-tools
          openssl procps python3 util-linux tmux faketime prometheus-cpp-dev prometheus ccache)
# ccache: rebuilds (three build directories, repeated runs) reuse compiled objects; tmux: the
# `redisync top` test; faketime: the client clock-jump test.
# prometheus-cpp-dev: the optional exporter (REDISYNC_PROMETHEUS, on in scripts/test.sh's plain
# build); prometheus: its promtool checks the exposition in a test.

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
