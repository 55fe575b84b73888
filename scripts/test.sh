#!/usr/bin/env bash
# The README's test command: installs what is missing, builds with warnings as errors, and runs
# every test (unit + integration against real redis-server processes the tests start on free
# loopback ports). Then the same under AddressSanitizer+UBSan and ThreadSanitizer.
# SANITIZERS=0 skips the sanitizer builds (quick local runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh

run_suite() {  # build dir, cmake args...
  local dir=$1; shift
  echo "=== build $dir $*" >&2
  BUILD_DIR=$dir bash scripts/build.sh -DREDISYNC_WERROR=ON "$@"
  echo "=== test $dir" >&2
  (cd "$dir" && ctest --output-on-failure -j"$(nproc)" --timeout 600)
}

run_suite build
if [ "${SANITIZERS:-1}" != 0 ]; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_suite build-asan -DREDISYNC_SANITIZE=address,undefined -DREDISYNC_BUILD_BENCH=OFF
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
    run_suite build-tsan -DREDISYNC_SANITIZE=thread -DREDISYNC_BUILD_BENCH=OFF
fi
