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
# Shell builtins only (no process per file): this runs on every CI run.
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue
  l1='' l2=''
  { IFS= read -r l1 || true; IFS= read -r l2 || true; } <"$f"
  case "$f" in
    *.h | *.cpp | *.lua | *.sh | *.py | *.cmake | *.in | CMakeLists.txt | */CMakeLists.txt) ;;
    *) [[ $l1 == '#!'* ]] || continue ;;
  esac
  checked=$((checked + 1))
  [[ $l1 == *'SPDX-License-Identifier: Apache-2.0' || $l2 == *'SPDX-License-Identifier: Apache-2.0' ]] \
    || missing+=("$f")
done < <(git ls-files -z)

if ((${#missing[@]})); then
  printf 'spdx_test: no SPDX line in %s\n' "${missing[@]}" >&2
  fail "${#missing[@]} of $checked source files lack 'SPDX-License-Identifier: Apache-2.0'"
fi
echo "spdx_test: $checked source files carry the Apache-2.0 SPDX line"
