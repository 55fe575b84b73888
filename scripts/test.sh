#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command: installs what is missing, builds with warnings as errors, and runs
# every test: unit, integration (against real redis-server processes the tests start on free
# loopback ports), the chaos suite (tests/chaos: worker processes under injected faults) and the
# fuzz-target replays (fuzz/). It does so under ThreadSanitizer and under AddressSanitizer+UBSan
# (separate build directories, lighter chaos), then in the plain build. Each next suite's
# build runs in the background (build_in_background) while the previous suite's tests run:
# about 6 minutes less on two cores with a warm compiler cache. What is left of it when those
# tests end is built in the foreground with every core (finish_background).
#
# Environment:
#   SANITIZERS=0                    skip the sanitizer builds (quick local runs)
#   REDISYNC_SANITIZERS_STRICT=0    a failing sanitizer suite is reported but does not fail
#                                   the run (default 1: it fails the run)
#   REDISYNC_TEST_SLOTS_PER_CORE=N  ctest slots per core (default 3; a chaos case takes 2);
#                                   *_SANITIZED for the sanitizer builds (default 2)
#   BUILD_DIR=DIR                   the plain build's directory (default build; the sanitizer
#                                   builds use DIR-tsan and DIR-asan)
#   CONFIGURE_ONLY=1                configure each build and check it registers tests, without
#                                   building or running them (tests/scripts/readme_order_test.sh)
#   REDISYNC_CHAOS_WORKERS, REDISYNC_CHAOS_MS   size of each chaos case in the plain build
#                                   (default 8 workers, 6000 ms); *_SANITIZED for the
#                                   sanitizer builds (default 4 workers, 3000 ms)
#
# `bash scripts/test.sh --fast`: the inner loop. The plain build only, of the unit, CLI and
# integration tests and what they run, and only those tests (no chaos, sanitizers, fuzz
# replays, examples or packaging): a few minutes once the build directory is warm.
# Every step prints its wall time ("=== ... took N s") so the CI budget can be checked.
set -euo pipefail
cd "$(dirname "$0")/.."
FAST=0
MODE=all
MODE_ARGS=()
case "${1:-}" in
  --fast) FAST=1 ;;
  # Internal: one suite's build, run in the background by the full run (below).
  --build-only) MODE=build; shift; MODE_ARGS=("$@") ;;
  "") ;;
  *) echo "usage: bash scripts/test.sh [--fast]" >&2; exit 64 ;;
esac
if [ $MODE = all ]; then bash scripts/deps.sh; fi
SELF="$PWD/scripts/test.sh"
BUILD=${BUILD_DIR:-build}
# --fast: these targets, these tests.
FAST_TARGETS="unit_tests cli_unit_tests integration_tests redisync_cli redisync_test_worker"
FAST_TESTS='^(unit|cli|integration)\.'

# Builds one suite's directory (or, with CONFIGURE_ONLY=1, configures it and checks that it
# registers tests). Prints its wall time.
build_suite() {  # build dir, cmake args...
  local dir=$1; shift
  local t0=$SECONDS
  echo "=== build $dir $*" >&2
  # Explicit returns: `set -e` does not apply inside a function called as an `if` condition.
  # Every option a suite depends on is passed explicitly: the directory may hold a cache from
  # another command (scripts/demo.sh, given the same BUILD_DIR, turns tests and examples off).
  local targets=""
  if [ $FAST = 1 ]; then targets=$FAST_TARGETS; fi
  TARGETS=$targets BUILD_DIR=$dir bash scripts/build.sh -DREDISYNC_WERROR=ON \
    -DREDISYNC_BUILD_TESTS=ON -DREDISYNC_BUILD_EXAMPLES=ON -DREDISYNC_BUILD_TOOLS=ON \
    -DREDISYNC_CHAOS=ON "$@" || return 1
  if [ "${CONFIGURE_ONLY:-0}" = 1 ]; then
    # Registered tests, counted without building (gtest's discovered tests count as one
    # "_NOT_BUILT" entry per binary until built).
    local n
    n=$(cd "$dir" && ctest -N | sed -n 's/^Total Tests: //p')
    echo "=== $dir registers ${n:-0} tests" >&2
    [ "${n:-0}" -gt 0 ] || return 1
    return 0
  fi
  echo "=== build $dir took $((SECONDS - t0)) s" >&2
}

# Runs one suite's tests. Prints its wall time.
test_suite() {  # build dir
  local dir=$1
  local t0=$SECONDS
  local filter=()
  if [ $FAST = 1 ]; then filter=(-R "$FAST_TESTS"); fi
  echo "=== test $dir" >&2
  local rc=0
  # Most tests wait on leases and servers, not the CPU (the plain suite used a quarter of a
  # core at -j2): 3 ctest slots per core, 2 in the sanitizer builds, whose instrumented
  # processes are several times slower (at 3, two load-bound test races showed under TSan).
  # A chaos case takes 2 slots (tests/CMakeLists.txt).
  # SLOTS_PER_CORE: set by sanitizer_suite for its call.
  local slots=$(( $(nproc) * ${SLOTS_PER_CORE:-${REDISYNC_TEST_SLOTS_PER_CORE:-3}} ))
  (cd "$dir" && ctest --output-on-failure --no-tests=error -j"$slots" --timeout 600 \
    "${filter[@]}") || rc=1
  echo "=== test $dir took $((SECONDS - t0)) s" >&2
  return $rc
}

# The next suite's build runs while this suite's tests do, at the lowest CPU and I/O
# priority and one compile job: the tests mostly wait on leases and servers (a sanitizer
# suite's tests left 30-60% of the two cores idle), so the build takes idle time. With two
# jobs the TSan tests took 857 s instead of 728 s and a test with a tight timeout failed; the
# build then took 758 s instead of 367 s, about the length of the tests it runs beside. Its
# output goes to DIR/suite-build.log, shown if it fails.
BACKGROUND_PID=""
BACKGROUND_DIR=""
BACKGROUND_ARGS=()
build_in_background() {  # build dir, cmake args...
  BACKGROUND_DIR=$1
  BACKGROUND_ARGS=("$@")
  mkdir -p "$1"
  # setsid: its own process group, so a stopped run can end the whole build (cancel_background).
  BUILD_JOBS=1 setsid nice -n 19 ionice -c 3 bash "$SELF" --build-only "$@" \
    >"$1/suite-build.log" 2>&1 &
  BACKGROUND_PID=$!
  echo "=== build $1 started in the background (log: $1/suite-build.log)" >&2
}
wait_background() {
  local rc=0
  wait "$BACKGROUND_PID" || rc=$?
  grep '^=== build' "$BACKGROUND_DIR/suite-build.log" >&2 || true
  if [ $rc != 0 ]; then
    tail -n 100 "$BACKGROUND_DIR/suite-build.log" >&2
    echo "=== build $BACKGROUND_DIR FAILED" >&2
  fi
  BACKGROUND_PID=""
  return $rc
}
cancel_background() {
  if [ -n "$BACKGROUND_PID" ]; then kill -- "-$BACKGROUND_PID" 2>/dev/null || true; fi
}
# The background build once the tests beside it have ended. Still running (a cold compiler
# cache: the ASan build outlasted the TSan tests by many minutes at one job), it is stopped
# and what is left is built in the foreground with every core. Ninja, stopped, keeps every
# finished object (so does the cache): only the compiles in flight are redone.
finish_background() {
  if background_ended; then
    wait_background
    return
  fi
  echo "=== build $BACKGROUND_DIR still running when the tests ended: finishing it in the foreground" >&2
  cancel_background
  # The whole group gone (the build script, Ninja and its compilers), so two Ninjas never
  # share the directory; at most 60 s.
  local until=$((SECONDS + 60))
  while { ! background_ended || kill -0 -- "-$BACKGROUND_PID" 2>/dev/null; } && [ $SECONDS -lt $until ]; do
    if background_ended; then wait "$BACKGROUND_PID" 2>/dev/null || true; fi  # reaps the zombie
    sleep 0.2
  done
  grep '^=== build' "$BACKGROUND_DIR/suite-build.log" >&2 || true
  if ! background_ended || kill -0 -- "-$BACKGROUND_PID" 2>/dev/null; then
    echo "=== build $BACKGROUND_DIR: the stopped background build did not end within 60 s" >&2
    return 1
  fi
  BACKGROUND_PID=""
  build_suite "${BACKGROUND_ARGS[@]}"
}
# True when the background build script has exited (a zombie until waited for, or reaped).
background_ended() {
  local state
  state=$(ps -o stat= -p "$BACKGROUND_PID" 2>/dev/null || true)
  [ -z "$state" ] || [[ $state == Z* ]]
}
trap cancel_background EXIT

# A sanitizer suite's verdict: strict unless REDISYNC_SANITIZERS_STRICT=0.
sanitizer_verdict() {  # label, rc
  if [ "$2" = 0 ]; then
    if [ "${CONFIGURE_ONLY:-0}" = 1 ]; then
      echo "=== $1 suite: configured only (CONFIGURE_ONLY=1): nothing built, no test ran" >&2
    else
      echo "=== $1 suite: clean" >&2
    fi
  else
    echo "=== $1 suite: FAILURES (see above)" >&2
    if [ "${REDISYNC_SANITIZERS_STRICT:-1}" != 0 ]; then exit 1; fi
  fi
}

# The suites' build options.
# Sanitizer builds skip the benchmarks. Line tables (-g1) are all a sanitizer's stack traces
# need, and link far faster than -g.
TSAN_ARGS=(-DREDISYNC_SANITIZE=thread -DREDISYNC_BUILD_BENCH=OFF
           "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
# -O1 -g1 for ASan+UBSan: with -O2 -g this build alone took 17 min of a 34 min CI on two
# cores (4 min with -O1 -g1); line tables still give symbolized stack traces. GCC's
# maybe-uninitialized warning misfires inside asio at -O1 (the plain -O2 build keeps it).
ASAN_ARGS=(-DREDISYNC_SANITIZE=address,undefined -DREDISYNC_BUILD_BENCH=OFF
           "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG -Wno-maybe-uninitialized")
PLAIN_ARGS=(-DREDISYNC_BUILD_BENCH=ON -DREDISYNC_SANITIZE= -DREDISYNC_PROMETHEUS=ON
            "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")

if [ $MODE = build ]; then
  build_suite "${MODE_ARGS[@]}"
  exit 0
fi

if [ "${CONFIGURE_ONLY:-0}" = 1 ]; then
  if [ "${SANITIZERS:-1}" != 0 ] && [ $FAST = 0 ]; then
    rc=0; build_suite "$BUILD-tsan" "${TSAN_ARGS[@]}" || rc=1
    sanitizer_verdict ThreadSanitizer $rc
    rc=0; build_suite "$BUILD-asan" "${ASAN_ARGS[@]}" || rc=1
    sanitizer_verdict AddressSanitizer+UBSan $rc
  fi
  build_suite "$BUILD" "${PLAIN_ARGS[@]}"
  echo "=== plain suite: configured only (CONFIGURE_ONLY=1): nothing built, no test ran" >&2
  exit 0
fi

if [ "${SANITIZERS:-1}" = 0 ] || [ $FAST = 1 ]; then
  build_suite "$BUILD" "${PLAIN_ARGS[@]}"
  test_suite "$BUILD"
  exit $?
fi

# The sanitizer suites run each chaos case smaller (instrumented workers are 5-15x slower;
# the point there is the sanitizers' reports, the figures come from the plain build).
sanitizer_env=(REDISYNC_CHAOS_WORKERS="${REDISYNC_CHAOS_WORKERS_SANITIZED:-4}"
               REDISYNC_CHAOS_MS="${REDISYNC_CHAOS_MS_SANITIZED:-3000}"
               TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp"
               ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1
               UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)
# allocator_may_return_null: a peer announcing a huge reply makes hiredis ask for a huge
# allocation; the reader handles the failure (ProtocolError); ASan must not abort instead.
sanitized_tests() {  # build dir
  (export "${sanitizer_env[@]}" SLOTS_PER_CORE="${REDISYNC_TEST_SLOTS_PER_CORE_SANITIZED:-2}"
   test_suite "$1")
}

rc=0; build_suite "$BUILD-tsan" "${TSAN_ARGS[@]}" || rc=1
if [ $rc = 0 ]; then
  build_in_background "$BUILD-asan" "${ASAN_ARGS[@]}"
  sanitized_tests "$BUILD-tsan" || rc=1
fi
sanitizer_verdict ThreadSanitizer $rc  # exits when strict and failed (the trap ends the build)

rc=0
if [ -n "$BACKGROUND_PID" ]; then finish_background || rc=1; else build_suite "$BUILD-asan" "${ASAN_ARGS[@]}" || rc=1; fi
if [ $rc = 0 ]; then
  build_in_background "$BUILD" "${PLAIN_ARGS[@]}"
  sanitized_tests "$BUILD-asan" || rc=1
fi
sanitizer_verdict AddressSanitizer+UBSan $rc

# The plain build last, so its ctest summary closes the log.
if [ -n "$BACKGROUND_PID" ]; then finish_background; else build_suite "$BUILD" "${PLAIN_ARGS[@]}"; fi
test_suite "$BUILD"
