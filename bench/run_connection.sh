#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compares redisync's pipelined throughput and round trip with redis-benchmark on a private
# redis-server (pinned to CPU 0; both clients pinned to CPU 1).
#   bench/run_connection.sh [dir with bench_connection and bench_lock]   (default build/bench)
# Takes well under two minutes. Numbers are only meaningful on an otherwise idle machine: the
# load average is printed with the results. On a shared box, the server and both clients run
# at a raised priority (BENCH_NICE, default -10; needs root or CAP_SYS_NICE, else ignored) so
# that background builds skew them less; BENCH_NICE=0 turns that off.
set -euo pipefail

BIN_DIR=${1:-build/bench}
MIN_TIME=${BENCH_MIN_TIME:-0.5}
NICE=${BENCH_NICE:--10}
if [[ "$(nice -n "$NICE" nice 2>/dev/null)" != "$(( $(nice) + NICE ))" ]]; then
  echo "note: cannot renice to $NICE; running at normal priority" >&2
  NICE=0
fi
# Command prefixes: the server on CPU 0, the clients on CPU 1, at the chosen priority.
ON_CPU0=(nice -n "$NICE" taskset -c 0)
ON_CPU1=(nice -n "$NICE" taskset -c 1)
for exe in bench_connection bench_lock; do
  [[ -x "$BIN_DIR/$exe" ]] || { echo "missing $BIN_DIR/$exe (build with REDISYNC_BUILD_BENCH=ON)" >&2; exit 1; }
done
for tool in redis-server redis-cli redis-benchmark taskset python3; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done

WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
  if [[ -n "$SERVER_PID" ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# A free loopback port: bind port 0 and let the kernel choose.
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$WORK" && exec "${ON_CPU0[@]}" redis-server --save "" --appendonly no --port "$PORT" \
  --bind 127.0.0.1 --daemonize no >"$WORK/redis.log" 2>&1) &
SERVER_PID=$!
for _ in $(seq 50); do
  redis-cli -p "$PORT" PING 2>/dev/null | grep -q PONG && break
  sleep 0.1
done
redis-cli -p "$PORT" PING | grep -q PONG || { echo "redis-server did not start:" >&2; cat "$WORK/redis.log" >&2; exit 1; }
export REDISYNC_BENCH_URL="redis://127.0.0.1:$PORT"

SCRIPT="if redis.call('exists', KEYS[1]) == 0 then redis.call('hincrby', KEYS[1], ARGV[2], 1) redis.call('pexpire', KEYS[1], ARGV[1]) return nil end return redis.call('pttl', KEYS[1])"
SHA=$(redis-cli -p "$PORT" SCRIPT LOAD "$SCRIPT")

# rb NAME ARGS...: redis-benchmark on CPU 1, CSV saved as $WORK/rb_NAME.csv.
rb() {
  local name=$1; shift
  echo "redis-benchmark $*" >&2
  timeout 30 "${ON_CPU1[@]}" redis-benchmark -h 127.0.0.1 -p "$PORT" --csv "$@" >"$WORK/rb_$name.csv"
}
# ours EXE FILTER NAME: one Google Benchmark group on CPU 1, JSON saved as $WORK/gb_NAME.json.
ours() {
  echo "$1 --benchmark_filter=$2" >&2
  timeout 60 "${ON_CPU1[@]}" "$BIN_DIR/$1" --benchmark_filter="$2" --benchmark_min_time="$MIN_TIME" \
    --benchmark_format=json >"$WORK/gb_$3.json"
}

# Each redis-benchmark case runs right before ours, so both see similar background load.
rb ping_p16_c1 -P 16 -c 1 -n 200000 -t ping
rb ping_p16_c50 -P 16 -c 50 -n 200000 -t ping
ours bench_connection 'BM_PipelinedPing' ping
rb eval_p16_c1 -P 16 -c 1 -n 200000 -r 1000 EVALSHA "$SHA" 1 bench:__rand_int__ 10000 owner
rb eval_p16_c50 -P 16 -c 50 -n 200000 -r 1000 EVALSHA "$SHA" 1 bench:__rand_int__ 10000 owner
ours bench_connection 'BM_PipelinedEvalsha' eval
rb ping_p1_c1 -P 1 -c 1 -n 20000 -t ping
ours bench_connection 'BM_SequentialPing' seq
ours bench_lock '.' lock

python3 - "$WORK" <<'PY'
import csv, json, os, sys

work = sys.argv[1]

def rb(name, test=None):
    """(rps, avg latency ms) of a redis-benchmark CSV; `test` picks a row (default: last)."""
    with open(os.path.join(work, f"rb_{name}.csv")) as f:
        rows = list(csv.DictReader(f))
    row = next(r for r in rows if r["test"] == test) if test else rows[-1]
    return float(row["rps"]), float(row["avg_latency_ms"])

benches, load = {}, None
for f in sorted(os.listdir(work)):
    if f.startswith("gb_"):
        data = json.load(open(os.path.join(work, f)))
        load = load or data["context"].get("load_avg")
        for b in data["benchmarks"]:
            if "error_message" in b:
                sys.exit(f"{b['name']}: {b['error_message']}")
            benches[b["name"].replace("/real_time", "")] = b

def ours_rps(name):
    return benches[name]["items_per_second"]

def ours_us(name):
    b = benches[name]
    if "us_per_op" in b:
        return b["us_per_op"]
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b["time_unit"]]
    return b["real_time"] * scale

fmt = "{:<44} {:>14} {:>14} {:>8}"
print()
print(fmt.format("case", "redis-bench", "redisync", "ratio"))
print("-" * 83)
def row(label, theirs, mine, unit, higher_is_better=True):
    ratio = mine / theirs if higher_is_better else theirs / mine
    print(fmt.format(label, f"{theirs:,.0f} {unit}" if unit == "rps" else f"{theirs:.1f} {unit}",
                     f"{mine:,.0f} {unit}" if unit == "rps" else f"{mine:.1f} {unit}",
                     f"{ratio:.2f}"))

ping16 = rb("ping_p16_c1", "PING_MBULK")[0]
row("PING  -P16 -c1  vs window 16", ping16, ours_rps("BM_PipelinedPing/16"), "rps")
row("PING  -P16 -c1  vs window 64", ping16, ours_rps("BM_PipelinedPing/64"), "rps")
row("PING  -P16 -c50 vs window 64", rb("ping_p16_c50", "PING_MBULK")[0],
    ours_rps("BM_PipelinedPing/64"), "rps")
eval16 = rb("eval_p16_c1")[0]
row("EVALSHA -P16 -c1  vs window 16", eval16, ours_rps("BM_PipelinedEvalsha/16"), "rps")
row("EVALSHA -P16 -c1  vs window 64", eval16, ours_rps("BM_PipelinedEvalsha/64"), "rps")
row("EVALSHA -P16 -c50 vs window 64", rb("eval_p16_c50")[0],
    ours_rps("BM_PipelinedEvalsha/64"), "rps")
p1_rps, p1_avg_ms = rb("ping_p1_c1", "PING_MBULK")
row("PING round trip -P1 -c1 vs async window 1", 1e6 / p1_rps, ours_us("BM_PipelinedPing/1"),
    "us", higher_is_better=False)
row("PING round trip -P1 -c1 vs blocking execute", 1e6 / p1_rps, ours_us("BM_SequentialPing"),
    "us", higher_is_better=False)
print("(ratio: redisync relative to redis-benchmark, > 1 is better; round trip = 1/rps of one"
      " connection)")

print()
fmt2 = "{:<36} {:>12} {:>12} {:>10} {:>10}"
print(fmt2.format("lock benchmark", "ops/s", "mean us", "lock us", "unlock us"))
print("-" * 84)
for name in ("BM_UncontendedLockUnlock", "BM_UncontendedWatchdogLockUnlock", "BM_TryLockHeld"):
    b = benches[name]
    lk, ul = b.get("lock_us"), b.get("unlock_us")
    print(fmt2.format(name, f"{b['items_per_second']:,.0f}", f"{ours_us(name):.1f}",
                      f"{lk:.1f}" if lk else "-", f"{ul:.1f}" if ul else "-"))

if load:
    print(f"\nload average during the run: {', '.join(f'{x:.2f}' for x in load)} "
          f"(on {os.cpu_count()} CPUs; above ~0.5 the numbers are skewed by other work)")
if ours_rps("BM_PipelinedEvalsha/16") < 0.7 * eval16:
    print("NOTE: pipelined EVALSHA (window 16) is below 70% of redis-benchmark -P 16 -c 1")
PY
