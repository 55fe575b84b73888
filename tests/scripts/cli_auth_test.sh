#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A server that refuses the CLI's credentials is not an unreachable one: against a private
# redis-server with --requirepass, a wrong or missing password makes `status`, `ls`, `run` and
# `run --multi` say the server refused the credentials and exit 77 (EX_NOPERM), not "cannot
# reach Redis" (69); the right password works.
#   cli_auth_test.sh REDISYNC_CLI
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cli=${1:?usage: cli_auth_test.sh REDISYNC_CLI}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/redisync-cli-auth.XXXXXX")
PRIVATE_REDIS_EXIT_TRAP='rm -rf "$tmp"'
trap 'rm -rf "$tmp"' EXIT
. "$here/private_redis.sh"
fail() { echo "cli_auth_test: $*" >&2; exit 1; }

start_private_redis "$tmp" --requirepass right-password
base="127.0.0.1:$REDIS_PORT"

# expect_refused LABEL URL COMMAND...: exit 77 and the message.
expect_refused() {
  local label=$1 url=$2 rc=0 out
  shift 2
  out=$(timeout 60 "$cli" "$@" --redis "$url" 2>&1) || rc=$?
  [ "$rc" = 77 ] || fail "$label: exit $rc, expected 77; output: $out"
  grep -q 'refused the credentials' <<<"$out" || fail "$label: no 'refused the credentials' in: $out"
  if grep -q 'cannot reach' <<<"$out"; then fail "$label: still says 'cannot reach': $out"; fi
}
expect_refused "status, wrong password" "redis://:wrong@$base" status auth-test
expect_refused "status, no password" "redis://$base" status auth-test
expect_refused "ls, wrong password" "redis://:wrong@$base" ls

rc=0
out=$(timeout 60 "$cli" run --redis "redis://:wrong@$base" auth-test -- true 2>&1) || rc=$?
[ "$rc" = 77 ] || fail "run, wrong password: exit $rc, expected 77; output: $out"
# A multi-lock whose every member was refused: the same answer, with and without --wait
# (each member's outcome is "credentials refused", not "unreachable").
for wait in "" "--wait=1s"; do
  rc=0
  out=$(timeout 60 "$cli" run --redis "redis://:wrong@$base" $wait --multi auth-a auth-b -- true 2>&1) || rc=$?
  [ "$rc" = 77 ] || fail "run --multi $wait, wrong password: exit $rc, expected 77; output: $out"
  grep -Eq 'credentials refused|refused the credentials' <<<"$out" || fail "run --multi $wait: no refusal named in: $out"
done

timeout 60 "$cli" run --redis "redis://:right-password@$base" auth-test -- true \
  || fail "run with the right password failed"
echo "cli_auth_test: a refused password exits 77 with its own message; the right one works"
