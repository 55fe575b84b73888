#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every tracked source file carries the licence line `SPDX-License-Identifier: Apache-2.0`
# within its first two lines (the second when the first is a shebang), and LICENSE holds the
# Apache-2.0 text. Source files: *.h *.cpp *.lua *.sh *.py *.cmake *.in, CMakeLists.txt and any
# other tracked file that starts with `#!`. Needs git (a clone, not an exported tarball).
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "spdx_test: $*" >&2; exit 1; }

grep -q 'Apache License' LICENSE 2>/dev/null && grep -q 'Version 2.0, January 2004' LICENSE \
  || fail "LICENSE is missing or is not the Apache-2.0 text"

missing=()
checked=0
while IFS= read -r -d '' f; do
  case "$f" in
    *.h | *.cpp | *.lua | *.sh | *.py | *.cmake | *.in | CMakeLists.txt | */CMakeLists.txt) ;;
    *) [ "$(head -c 2 "$f" | tr -d '\0')" = '#!' ] || continue ;;
  esac
  checked=$((checked + 1))
  head -n 2 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0$' || missing+=("$f")
done < <(git ls-files -z)

if ((${#missing[@]})); then
  printf 'spdx_test: no SPDX line in %s\n' "${missing[@]}" >&2
  fail "${#missing[@]} of $checked source files lack 'SPDX-License-Identifier: Apache-2.0'"
fi
echo "spdx_test: $checked source files carry the Apache-2.0 SPDX line"
