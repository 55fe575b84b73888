#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs redisync to a temporary prefix, moves the installed tree elsewhere (the package must
# be relocatable), then builds tests/package/consumer.cpp against it with find_package(redisync)
# and with plain `pkg-config --cflags --libs redisync`, each as C++20 and as C++23 (the package
# must not lower the standard, and carries the library's ASIO_* definitions), and runs every
# consumer against a private redis-server.
#
#   package_test.sh BUILD_DIR          installs the given (static) build
#   package_test.sh --shared SOURCE    builds tests/package/fetch_content: a project that takes
#                                      redisync in from SOURCE with FetchContent (no download),
#                                      with -DREDISYNC_SHARED=ON and GTest, google-benchmark and
#                                      CLI11 unavailable (a subproject must not need them); runs
#                                      that consumer, checks the SONAME and the exported
#                                      symbols (exported_symbols.sh), then installs that
#                                      build (the library is built once for all checks)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/redisync-package.XXXXXX")
PRIVATE_REDIS_EXIT_TRAP='rm -rf "$tmp"'
trap 'rm -rf "$tmp"' EXIT
. "$here/private_redis.sh"
fail() { echo "package_test: $*" >&2; exit 1; }
# Consumers are built at -O0 without debug info: these builds check packaging, not code.
quick=(-DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0)

start_private_redis "$tmp"

shared=0
if [ "${1:-}" = --shared ]; then
  shared=1
  build="$tmp/fetch-consumer"
  # GTest and benchmark are made unfindable; CLI11 is a find_path, which cannot be: its cache
  # entry must simply be absent (never searched).
  cmake -S "$src/tests/package/fetch_content" -B "$build" "${quick[@]}" \
    -DREDISYNC_SOURCE="${2:-$src}" -DREDISYNC_SHARED=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON \
    >"$tmp/fetch-configure.log" 2>&1 || { cat "$tmp/fetch-configure.log" >&2;
      fail "a FetchContent consumer does not configure without GTest and google-benchmark"; }
  if grep -q '^CLI11_INCLUDE_DIR\|^GTest_DIR\|^benchmark_DIR' "$build/CMakeCache.txt"; then
    fail "a FetchContent consumer searched for the tests', benchmarks' or CLI's packages"
  fi
  cmake --build "$build" -j"$(nproc)" >"$tmp/fetch-build.log" 2>&1 || {
    tail -30 "$tmp/fetch-build.log" >&2; fail "the FetchContent consumer does not build"; }
  "$build/consumer" "$REDIS_URL" || fail "the FetchContent consumer failed"
  lib=$(find "$build" -name 'libredisync.so.*.*.*' -print -quit)
  soname=$(objdump -p "$lib" | awk '/SONAME/ {print $2}')
  [ "$soname" = libredisync.so.0.1 ] || fail "SONAME is '$soname', expected libredisync.so.0.1"
  echo "package_test: FetchContent consumer ran; SONAME $soname"
  bash "$here/exported_symbols.sh" "$lib" || fail "the shared library exports more than its API"
else
  build=$(cd "${1:?usage: package_test.sh BUILD_DIR | --shared SOURCE}" && pwd)
fi

cmake --install "$build" --prefix "$tmp/staged" >/dev/null
mv "$tmp/staged" "$tmp/moved"
prefix="$tmp/moved"
libdir=$(dirname "$(find "$prefix" -name redisync.pc -print -quit)")
libdir=$(dirname "$libdir")
[ -f "$libdir/pkgconfig/redisync.pc" ] || fail "no redisync.pc installed"
if grep -q "$tmp/staged\|/usr/local" "$libdir/pkgconfig/redisync.pc"; then
  fail "redisync.pc names a fixed prefix: $(grep prefix= "$libdir/pkgconfig/redisync.pc")"
fi
if grep -rq "$tmp/staged" "$libdir/cmake/redisync"; then
  fail "the CMake package names the staging prefix"
fi
if [ $shared = 1 ]; then export LD_LIBRARY_PATH="$libdir"; fi

# run_consumer BINARY STD WAY: runs it, checks it was compiled as C++STD.
run_consumer() {
  local out want
  out=$("$1" "$REDIS_URL") || fail "the $3 C++$2 consumer failed"
  echo "$out"
  case $2 in 20) want=202002 ;; 23) want=202100 ;; esac  # GCC 12's -std=c++23 is 202100
  [[ $out == "consumer: C++ $want,"* ]] || fail "the $3 consumer asked for C++$2 and got: $out"
}

export PKG_CONFIG_PATH="$libdir/pkgconfig"
pcflags=$(pkg-config --cflags --libs redisync)
for std in 20 23; do
  # 1. CMake: find_package(redisync) through CMAKE_PREFIX_PATH.
  cmake -S "$src/tests/package/find_package" -B "$tmp/cmake-$std" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_CXX_STANDARD="$std" "${quick[@]}" >/dev/null
  cmake --build "$tmp/cmake-$std" >/dev/null || fail "the find_package C++$std consumer does not build"
  run_consumer "$tmp/cmake-$std/consumer" "$std" find_package
  # 2. Plain pkg-config, flags after the consumer's own -std (as a Makefile's CXXFLAGS would be).
  # shellcheck disable=SC2086  # the flags are words
  g++ -std=c++$std -O0 -o "$tmp/pc-$std" "$src/tests/package/consumer.cpp" $pcflags \
    || fail "the plain pkg-config C++$std consumer does not build (flags: $pcflags)"
  run_consumer "$tmp/pc-$std" "$std" pkg-config
done
echo "package_test: find_package and pkg-config consumers, C++20 and C++23, ran (prefix moved after install)"
