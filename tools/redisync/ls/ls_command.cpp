// SPDX-License-Identifier: Apache-2.0
#include "ls_command.h"

#include <iostream>

#include "cli_error.h"
#include "ls_scan.h"
#include "names.h"
#include "redis_option.h"

namespace redisync::cli {

void check_count(int count) {
  if (count < 1 || count > 100000) {
    throw UsageError("--count must be between 1 and 100000 (got " + std::to_string(count) + ")");
  }
}

CLI::App* add_ls_command(CLI::App& app, LsOptions& o) {
  CLI::App* ls = app.add_subcommand("ls", "List locks and synchronizers (SCAN)");
  ls->footer(
      "List the locks and synchronizers whose names match PATTERN (a Redis glob, default *),\n"
      "one line each: KIND NAME HOLDERS LEASE WAITERS PERMITS DETAIL. Found with SCAN in\n"
      "batches of --count keys (never KEYS: the server stays responsive), on every master of a\n"
      "cluster. KIND is a name of `redisync kinds`, claimed only when the keys prove it; else\n"
      "'ambiguous', with the candidates in DETAIL: a hash of owner fields alone is a lock or a\n"
      "fair-lock nobody waits for (a spin-lock and the non-reentrant kinds look the same); an\n"
      "integer alone is a semaphore's, a count-down-latch's or anybody's number, listed only\n"
      "with --counts. WAITERS is a fair lock's queue length (other kinds' waiters are pub/sub\n"
      "subscribers, not stored: '-'). Keys in no primitive's layout are not listed. Nothing\n"
      "matching: no output, exit 0. Exit 69: Redis unreachable.\n"
      "Each NAME (and a holder's owner) is one word: a space shows as \\x20, a backslash as\n"
      "\\\\, control bytes as \\n, \\t, \\xNN. --json has the exact bytes in name_hex (and\n"
      "in name when they are UTF-8): `status` and `unlock --force` take them as --name-hex.\n"
      "A key named like a helper key (redisson_*, {NAME}:timeout...) is listed when its\n"
      "type and fields are a kind's.");
  add_redis_option(*ls, o.redis_url);
  ls->add_flag("--json", o.json, "Print a JSON array instead of aligned lines");
  ls->add_option("--count", o.count, "SCAN COUNT hint per call (default 100)");
  ls->add_flag("--counts", o.counts,
               "Also list integer keys with no companion key: a semaphore's or latch's count, "
               "or anybody's number (shown as ambiguous)");
  ls->add_option("pattern", o.pattern, "Name pattern (Redis glob: * ? [abc]); default *");
  return ls;
}

int ls_command(const LsOptions& o) {
  check_name(o.pattern, "ls", "the PATTERN");
  check_count(o.count);
  Client client(config_from_url(o.redis_url));
  const auto entries = scan_locks(client, o.pattern, o.count, o.counts);
  std::cout << (o.json ? render_ls_json(entries) + "\n" : render_ls_text(entries)) << std::flush;
  return 0;
}

}  // namespace redisync::cli
