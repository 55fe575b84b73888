#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The man page and bash completion installed with the CLI are generated from its own option
# definitions (`redisync --generate-man`, `--generate-completion bash`). The checked-in copies
# must be what the binary generates now: an option added without regenerating fails here.
# The completion must complete, the man page must format without warnings, and --version
# must print the version.
#   cli_docs_test.sh REDISYNC_BINARY SOURCE_DIR
set -euo pipefail
redisync=${1:?usage: cli_docs_test.sh REDISYNC_BINARY SOURCE_DIR}
src=${2:?usage: cli_docs_test.sh REDISYNC_BINARY SOURCE_DIR}
share=$src/tools/redisync/share
fail() { echo "cli_docs_test: $*" >&2; exit 1; }

diff -u "$share/redisync.1" <("$redisync" --generate-man) ||
  fail "tools/redisync/share/redisync.1 is stale: redisync --generate-man > tools/redisync/share/redisync.1"
diff -u "$share/redisync.bash" <("$redisync" --generate-completion bash) ||
  fail "tools/redisync/share/redisync.bash is stale:" \
       "redisync --generate-completion bash > tools/redisync/share/redisync.bash"

warnings=$(groff -man -Tutf8 -ww -z "$share/redisync.1" 2>&1) || fail "groff failed: $warnings"
[ -z "$warnings" ] || fail "groff warns about the man page: $warnings"
grep -q -- '--name-hex' <(groff -man -Tascii "$share/redisync.1" 2>/dev/null | col -b) ||
  fail "the formatted man page lacks an option of status (--name-hex)"

# completes: COMP_WORDS up to the cursor -> the candidates offered.
completes() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _redisync
           printf "%s\n" "${COMPREPLY[@]}"' _ "$share/redisync.bash" "$@"
}
completes redisync ru | grep -qx run || fail "'redisync ru<TAB>' does not offer run"
completes redisync run --ki | grep -qx -- --kind || fail "'redisync run --ki<TAB>' does not offer --kind"
completes redisync status --name | grep -qx -- --name-hex || fail "'status --name<TAB>': no --name-hex"
completes redisync kin | grep -qx kinds || fail "'redisync kin<TAB>' does not offer kinds"
[ -z "$(completes redisync run x -- ls --ki)" ] || fail "words after -- are CMD's, not completed"

rc=0
"$redisync" bench driver --port 1 >/dev/null 2>&1 || rc=$?
[ "$rc" = 64 ] || fail "the installed CLI still runs the benchmark driver (it is redisync-bench): exit $rc"

version=$("$redisync" --version)
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || fail "--version printed '$version'"
echo "cli_docs_test: man page, completion and --version ($version) are current"
