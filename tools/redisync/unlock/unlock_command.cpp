// SPDX-License-Identifier: Apache-2.0
#include "unlock_command.h"

#include <iostream>

#include "cli_error.h"
#include "names.h"
#include "redis_option.h"
#include "redisync/client.h"
#include "redisync/fair_lock.h"
#include "redisync/fenced_lock.h"
#include "redisync/lock.h"
#include "redisync/read_write_lock.h"
#include "unlock_kinds.h"

namespace redisync::cli {
namespace {

// One force-unlock with the kind's own step (its channel and message wake its waiters).
bool force_unlock(Client& client, const std::string& name, const LockProbe& p) {
  switch (p.family) {
    case LockFamily::lock:
      return client.lock(name).force_unlock();
    case LockFamily::fair:
      return client.fair_lock(name).force_unlock();
    case LockFamily::fenced:
      return client.fenced_lock(name).force_unlock();
    case LockFamily::read_write: {
      auto rw = client.read_write_lock(name);
      return p.mode == "write" ? rw.write_lock().force_unlock() : rw.read_lock().force_unlock();
    }
    default:
      return false;
  }
}

}  // namespace

CLI::App* add_unlock_command(CLI::App& app, UnlockOptions& o) {
  CLI::App* unlock = app.add_subcommand("unlock", "Force-release a lock (--force)");
  unlock->footer(
      "Force-release a lock: delete it whoever holds it and wake its waiters. Needs --force:\n"
      "this process never holds the lock, so there is no ordinary release to do.\n"
      "Works on every lock kind (lock, spin lock, fair lock, read-write lock, fenced lock), each\n"
      "with its own release step. Anything else under NAME (a semaphore, a latch, a user's\n"
      "data) is refused with an error naming its type, and nothing is deleted.\n"
      "Prints \"released\" or \"was not locked\". Exit 0; 1 NAME is not a lock; 64 usage\n"
      "error; 69 Redis unreachable.");
  add_redis_option(*unlock, o.redis_url);
  unlock->add_flag("--force", o.force, "Delete the lock even though another process holds it");
  add_name_options(*unlock, o.name, o.name_hex);  // names.h
  return unlock;
}

int unlock_command(const UnlockOptions& o) {
  const std::string name = given_name(o.name, o.name_hex, "unlock");
  if (!o.force) {
    throw UsageError(
        "unlock needs --force: a redisync process never holds a lock it could release "
        "normally (locks taken by `redisync run` are released when the command exits); "
        "`redisync unlock --force " +
        (o.name_hex ? "--name-hex " + *o.name_hex : name) + "` deletes it whoever holds it");
  }
  Client client(config_from_url(o.redis_url));
  // The kind can change between the probe and the release (a read-write lock's mode): the
  // kind's own step checks its precondition, so probe again when it found nothing to do.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const LockProbe probe = probe_lock(client, name);
    if (probe.family == LockFamily::not_a_lock) {
      throw CliError(kExitFailure, "unlock: " + name + " is " + probe.description +
                                       ", not a lock; nothing deleted");
    }
    if (probe.family == LockFamily::none) break;
    if (force_unlock(client, name, probe)) {
      std::cout << "released" << std::endl;
      return 0;
    }
    if (probe.family != LockFamily::read_write) break;
  }
  std::cout << "was not locked" << std::endl;
  return 0;
}

}  // namespace redisync::cli
