#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs redisync to a temporary prefix, moves the installed tree elsewhere (the package must
# be relocatable), then builds tests/package/consumer.cpp against it twice, with
# find_package(redisync) and with pkg-config, and runs both against a private redis-server.
#
#   package_test.sh BUILD_DIR          the given (static) build, consumer linked with
#                                      `pkg-config --static`
#   package_test.sh --shared SOURCE    configures and builds the library alone with
#                                      -DREDISYNC_SHARED=ON in a temporary directory, checks its
#                                      SONAME, consumer linked with plain `pkg-config`
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/redisync-package.XXXXXX")
PRIVATE_REDIS_EXIT_TRAP='rm -rf "$tmp"'
trap 'rm -rf "$tmp"' EXIT
. "$here/private_redis.sh"
fail() { echo "package_test: $*" >&2; exit 1; }

shared=0
if [ "${1:-}" = --shared ]; then
  shared=1
  build="$tmp/build-shared"
  # -O0 without debug info: this build checks packaging (SONAME, relocation, pkg-config), not
  # code generation, and at -O2 -g it was the longest test of the plain suite (132 s).
  cmake -S "${2:-$src}" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 \
    -DREDISYNC_SHARED=ON \
    -DREDISYNC_BUILD_TESTS=OFF -DREDISYNC_BUILD_TOOLS=OFF -DREDISYNC_BUILD_BENCH=OFF \
    -DREDISYNC_BUILD_EXAMPLES=OFF >/dev/null
  cmake --build "$build" --target redisync -j"$(nproc)" >/dev/null
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
if [ $shared = 1 ]; then
  soname=$(objdump -p "$libdir/libredisync.so" | awk '/SONAME/ {print $2}')
  [ "$soname" = libredisync.so.0.1 ] || fail "SONAME is '$soname', expected libredisync.so.0.1"
  echo "package_test: SONAME $soname"
fi

start_private_redis "$tmp"

# 1. CMake: find_package(redisync) through CMAKE_PREFIX_PATH.
cmake -S "$src/tests/package" -B "$tmp/consumer-cmake" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$tmp/consumer-cmake" >/dev/null
"$tmp/consumer-cmake/consumer" "$REDIS_URL" || fail "the find_package consumer failed"

# 2. pkg-config (static link of the static library: --static brings hiredis and OpenSSL).
export PKG_CONFIG_PATH="$libdir/pkgconfig"
if [ $shared = 1 ]; then
  pcflags=$(pkg-config --cflags --libs redisync)
  export LD_LIBRARY_PATH="$libdir"
else
  pcflags=$(pkg-config --static --cflags --libs redisync)
fi
# shellcheck disable=SC2086  # the flags are words
g++ -o "$tmp/consumer-pc" "$src/tests/package/consumer.cpp" $pcflags
"$tmp/consumer-pc" "$REDIS_URL" || fail "the pkg-config consumer failed"
echo "package_test: both consumers ran (prefix moved after install)"
