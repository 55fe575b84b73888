# SPDX-License-Identifier: Apache-2.0
# Sourced by the script tests: start_private_redis DIR [OPTION...] starts a redis-server of its
# own on a free loopback port (no persistence, files in DIR, OPTIONs added to its command line,
# e.g. --requirepass P), sets REDIS_PORT and REDIS_URL, and appends the URL to REDIS_URLS.
# Every server started is stopped on exit (then PRIVATE_REDIS_EXIT_TRAP runs). Bash only; needs
# python3 (to find a free port) and redis-server / redis-cli.
REDIS_PIDS=()
REDIS_URLS=()
stop_private_redis() {
  local pid
  for pid in "${REDIS_PIDS[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  eval "${PRIVATE_REDIS_EXIT_TRAP:-}"
}
start_private_redis() {
  local dir=$1 tries=0 pid
  shift
  mkdir -p "$dir"
  REDIS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$dir" --daemonize no "$@" >"$dir/redis.log" 2>&1 &
  pid=$!
  REDIS_PIDS+=("$pid")
  trap stop_private_redis EXIT
  # Any answer means it is up (a server with --requirepass answers NOAUTH).
  until redis-cli -p "$REDIS_PORT" ping 2>&1 | grep -q 'PONG\|NOAUTH'; do
    tries=$((tries + 1))
    if [ "$tries" -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
      echo "private redis-server on port $REDIS_PORT did not start:" >&2
      cat "$dir/redis.log" >&2
      return 1
    fi
    sleep 0.05
  done
  REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
  REDIS_URLS+=("$REDIS_URL")
}
