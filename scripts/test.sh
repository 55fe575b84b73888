#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command: installs what is missing, builds with warnings as errors, and runs
# every test: unit, integration (against real redis-server processes the tests start on free
# loopback ports), the chaos suite (tests/chaos: worker processes under injected faults) and the
# fuzz-target replays (fuzz/). It does so under ThreadSanitizer and under AddressSanitizer+UBSan
# (separate build directories, lighter chaos), then in the plain build.
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
case "${1:-}" in
  --fast) FAST=1 ;;
  "") ;;
  *) echo "usage: bash scripts/test.sh [--fast]" >&2; exit 64 ;;
esac
bash scripts/deps.sh
BUILD=${BUILD_DIR:-build}
# --fast: these targets, these tests.
FAST_TARGETS="unit_tests cli_unit_tests integration_tests redisync_cli redisync_test_worker"
FAST_TESTS='^(unit|cli|integration)\.'

run_suite() {  # build dir, cmake args...
  local dir=$1; shift
  local t0=$SECONDS
  echo "=== build $dir $*" >&2
  # Explicit returns: `set -e` does not apply inside a function called as an `if` condition.
  # Every option a suite depends on is passed explicitly: the directory may hold a cache from
  # another command (scripts/demo.sh, given the same BUILD_DIR, turns tests and examples off).
  local targets="" filter=()
  if [ $FAST = 1 ]; then targets=$FAST_TARGETS; filter=(-R "$FAST_TESTS"); fi
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
  t0=$SECONDS
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

# A sanitizer suite: strict unless REDISYNC_SANITIZERS_STRICT=0.
sanitizer_suite() {  # label, build dir, cmake args...
  local label=$1; shift
  if SLOTS_PER_CORE=${REDISYNC_TEST_SLOTS_PER_CORE_SANITIZED:-2} run_suite "$@"; then
    if [ "${CONFIGURE_ONLY:-0}" = 1 ]; then
      echo "=== $label suite: configured only (CONFIGURE_ONLY=1): nothing built, no test ran" >&2
    else
      echo "=== $label suite: clean" >&2
    fi
  else
    echo "=== $label suite: FAILURES (see above)" >&2
    if [ "${REDISYNC_SANITIZERS_STRICT:-1}" != 0 ]; then exit 1; fi
  fi
}

if [ "${SANITIZERS:-1}" != 0 ] && [ $FAST = 0 ]; then
  # Sanitizer builds skip the benchmarks, and run each chaos case smaller (instrumented workers
  # are 5-15x slower; the point there is the sanitizers' reports, the figures come from the
  # plain build). Assignments before a function call hold for that call only.
  small_chaos=(REDISYNC_CHAOS_WORKERS="${REDISYNC_CHAOS_WORKERS_SANITIZED:-4}"
               REDISYNC_CHAOS_MS="${REDISYNC_CHAOS_MS_SANITIZED:-3000}")
  export "${small_chaos[@]}" \
    TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:allocator_may_return_null=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # allocator_may_return_null: a peer announcing a huge reply makes hiredis ask for a huge
  # allocation; the reader handles the failure (ProtocolError); ASan must not abort instead.
  # Line tables (-g1) are all a sanitizer's stack traces need, and link far faster than -g.
  sanitizer_suite ThreadSanitizer "$BUILD-tsan" -DREDISYNC_SANITIZE=thread -DREDISYNC_BUILD_BENCH=OFF \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
  # -O1 -g1 for ASan+UBSan: with -O2 -g this build alone took 17 min of a 34 min CI on two
  # cores (4 min with -O1 -g1); line tables still give symbolized stack traces. GCC's
  # maybe-uninitialized warning misfires inside asio at -O1 (the plain -O2 build keeps it).
  sanitizer_suite AddressSanitizer+UBSan "$BUILD-asan" -DREDISYNC_SANITIZE=address,undefined \
    -DREDISYNC_BUILD_BENCH=OFF "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG -Wno-maybe-uninitialized"
  unset REDISYNC_CHAOS_WORKERS REDISYNC_CHAOS_MS TSAN_OPTIONS ASAN_OPTIONS UBSAN_OPTIONS
fi
# The plain build last, so its ctest summary closes the log.
run_suite "$BUILD" -DREDISYNC_BUILD_BENCH=ON -DREDISYNC_SANITIZE= -DREDISYNC_PROMETHEUS=ON \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
