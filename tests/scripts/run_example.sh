#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs one example program (examples/) against private redis-servers; fails if it fails.
#   run_example.sh EXAMPLE_BINARY [SERVERS]   (SERVERS: how many, default 1; one URL each)
set -euo pipefail
example=${1:?usage: run_example.sh EXAMPLE_BINARY [SERVERS]}
servers=${2:-1}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/redisync-example.XXXXXX")
PRIVATE_REDIS_EXIT_TRAP='rm -rf "$tmp"'
trap 'rm -rf "$tmp"' EXIT
. "$here/private_redis.sh"
for ((i = 0; i < servers; i++)); do start_private_redis "$tmp/server$i"; done
"$example" "${REDIS_URLS[@]}"
