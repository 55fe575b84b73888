#include "unlock_command.h"

#include <iostream>

#include "cli_error.h"
#include "redis_option.h"
#include "redisync/client.h"
#include "redisync/lock.h"

namespace redisync::cli {

CLI::App* add_unlock_command(CLI::App& app, UnlockOptions& o) {
  CLI::App* unlock = app.add_subcommand("unlock", "Force-release a lock (--force)");
  unlock->footer(
      "Force-release a lock: delete it whoever holds it and wake a waiter. Needs --force:\n"
      "this process never holds the lock, so there is no ordinary release to do.");
  add_redis_option(*unlock, o.redis_url);
  unlock->add_flag("--force", o.force, "Delete the lock even though another process holds it");
  unlock->add_option("name", o.name, "Lock name")->required();
  return unlock;
}

int unlock_command(const UnlockOptions& o) {
  if (!o.force) {
    throw UsageError(
        "unlock needs --force: a redisync process never holds a lock it could release "
        "normally (locks taken by `redisync run` are released when the command exits); "
        "`redisync unlock --force " +
        o.name + "` deletes it whoever holds it");
  }
  Client client(config_from_url(o.redis_url));
  const bool was_held = client.lock(o.name).force_unlock();
  std::cout << (was_held ? "released" : "was not locked") << std::endl;
  return 0;
}

}  // namespace redisync::cli
