#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks what a shared libredisync exports (its dynamic symbol table): the API, which
# include/redisync/ marks REDISYNC_API (redisync/export.h), and nothing of the internals.
#
#   exported_symbols.sh LIBRARY
#
# Fails when
#   - a defined dynamic symbol lies outside namespace redisync: the library's internals are
#     hidden, and so are the standard library's template instances compiled into it
#     (src/exported_symbols.map). The namespace's vtables, VTTs, typeinfo, typeinfo names,
#     thunks, guard variables and static locals count as inside it.
#     One exception, namespace asio: Asio declares itself visible so that a process holds one
#     copy of its per-thread and per-process state, which the async templates of
#     include/redisync/ rely on when they run in the program on the library's io_context
#     (see src/exported_symbols.map);
#   - more than MAX_EXPORTED symbols are exported in all (default 600; 413 at -O2, 484 at
#     -O0, where less Asio code is inlined): a class marked REDISYNC_API exports all its
#     members, so an internal class marked by mistake, or Asio code newly compiled into the
#     library, shows here as a jump in the count.
# The symbols are read with `nm -D --defined-only` (mangled: the namespace is exact there) and
# shown demangled.
set -euo pipefail
MAX_EXPORTED=${MAX_EXPORTED:-600}
lib=${1:?usage: exported_symbols.sh LIBRARY}
[ -f "$lib" ] || { echo "exported_symbols: no such file: $lib" >&2; exit 1; }

# Itanium mangling: an optional special-name prefix (TV vtable, TI typeinfo, TS its name, TT
# VTT, TW/TH thread-local wrappers, Th/Tv thunks, GV guard variable), Z for a static local,
# then a nested name (N, cv/ref qualifiers) whose first component is the namespace.
special='^_Z(T[VISTWH]|GV|Th[n0-9]+_|Tv[n0-9]+_[n0-9]+_)?Z?N[rVKRO]*'
symbols=$(nm -D --defined-only "$lib" | awk 'NF >= 3 {print $3}')
count() { grep -c . || true; }
total=$(printf '%s\n' "$symbols" | count)
in_redisync=$(printf '%s\n' "$symbols" | grep -E "${special}8redisync" | count)
in_asio=$(printf '%s\n' "$symbols" | grep -E "${special}4asio" | count)
outside=$(printf '%s\n' "$symbols" | grep -Ev "${special}(8redisync|4asio)" | grep . || true)
n_outside=$(printf '%s\n' "$outside" | count)
echo "exported_symbols: $lib exports $total symbols: $in_redisync in namespace redisync," \
     "$in_asio in asio, $n_outside elsewhere (bound: $MAX_EXPORTED in all, 0 elsewhere)"
rc=0
if [ "$n_outside" -gt 0 ]; then
  echo "exported_symbols: exported outside namespaces redisync and asio (first 20):" >&2
  printf '%s\n' "$outside" | c++filt | sed -n '1,20s/^/  /p' >&2
  rc=1
fi
if [ "$total" -gt "$MAX_EXPORTED" ]; then
  echo "exported_symbols: $total symbols exported, more than the bound $MAX_EXPORTED" >&2
  rc=1
fi
exit $rc
