#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `redisync run --metrics-port P`: while the command runs, http://127.0.0.1:P/metrics serves
# the Client's metrics; the command itself fetches them here (the lock is held by then). The
# exposition must pass Prometheus' own checker (`promtool check metrics`) and show the
# acquisition. Bad ports are refused with exit 64.
#   metrics_exporter_test.sh REDISYNC_BINARY
set -euo pipefail
redisync=${1:?usage: metrics_exporter_test.sh REDISYNC_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/redisync-metrics.XXXXXX")
PRIVATE_REDIS_EXIT_TRAP='rm -rf "$tmp"'
trap 'rm -rf "$tmp"' EXIT
. "$here/private_redis.sh"
fail() { echo "metrics_exporter_test: $*" >&2; exit 1; }

start_private_redis "$tmp"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
fetch='
import sys, time, urllib.request
url, out = sys.argv[1], sys.argv[2]
for _ in range(100):  # bounded: 100 tries, 5 s
    try:
        body = urllib.request.urlopen(url, timeout=2).read()
        break
    except OSError:
        time.sleep(0.05)
else:
    sys.exit("no answer from " + url)
open(out, "wb").write(body)
'
"$redisync" run --redis "$REDIS_URL" --metrics-port "$port" metrics-test-lock -- \
  python3 -c "$fetch" "http://127.0.0.1:$port/metrics" "$tmp/metrics.txt" ||
  fail "redisync run --metrics-port failed"

promtool check metrics <"$tmp/metrics.txt" || fail "promtool rejects the exposition: $(cat "$tmp/metrics.txt")"
grep -q '^redisync_acquires_total{kind="lock"} 1$' "$tmp/metrics.txt" ||
  fail "the acquisition is not in the exposition: $(cat "$tmp/metrics.txt")"
grep -q '^redisync_acquire_wait_seconds_count{kind="lock"} 1$' "$tmp/metrics.txt" ||
  fail "the acquire wait is not in the exposition"

# A permit of N (redisync run --kind permit-expirable-semaphore --permits N) reports under its
# own kind, named as every command names it (`redisync kinds`), and the exposition with it
# still passes promtool.
"$redisync" run --redis "$REDIS_URL" --metrics-port "$port" --kind permit-expirable-semaphore \
  --permits 2 metrics-test-sem -- \
  python3 -c "$fetch" "http://127.0.0.1:$port/metrics" "$tmp/metrics-sem.txt" ||
  fail "redisync run --kind permit-expirable-semaphore --permits 2 --metrics-port failed"
promtool check metrics <"$tmp/metrics-sem.txt" ||
  fail "promtool rejects the semaphore's exposition: $(cat "$tmp/metrics-sem.txt")"
grep -q '^redisync_acquires_total{kind="permit-expirable-semaphore"} 1$' "$tmp/metrics-sem.txt" ||
  fail "the semaphore's acquisition is not in the exposition: $(cat "$tmp/metrics-sem.txt")"
grep -q '^redisync_attempts_per_acquire_count{kind="permit-expirable-semaphore"} 1$' \
  "$tmp/metrics-sem.txt" ||
  fail "the semaphore's attempts are not in the exposition"

for bad in 0 70000 x 127.0.0.1: ; do
  rc=0
  "$redisync" run --redis "$REDIS_URL" --metrics-port "$bad" metrics-test-lock -- true \
    2>"$tmp/err" || rc=$?
  [ "$rc" = 64 ] || fail "--metrics-port '$bad' exited $rc, expected 64"
  grep -q -- "--metrics-port" "$tmp/err" || fail "--metrics-port '$bad': no message naming the option"
done
echo "metrics_exporter_test: exposition served during the command and accepted by promtool"
