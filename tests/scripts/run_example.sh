#!/usr/bin/env bash
# Runs one example program (examples/) against a private redis-server; fails if it fails.
#   run_example.sh EXAMPLE_BINARY
set -euo pipefail
example=${1:?usage: run_example.sh EXAMPLE_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/redisync-example.XXXXXX")
PRIVATE_REDIS_EXIT_TRAP='rm -rf "$tmp"'
trap 'rm -rf "$tmp"' EXIT
. "$here/private_redis.sh"
start_private_redis "$tmp"
"$example" "$REDIS_URL"
