// SPDX-License-Identifier: Apache-2.0
// The requests of ReadWriteLock's acquisition records (sync/locks/rw_lock_steps.h), pinned byte
// for byte in both handoff modes, with and without the starvation guard: a Redisson client on
// the same lock reads this hash, these markers and this channel. No server: the Client never
// connects (nothing is sent).
#include "sync/locks/rw_lock_steps.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "lua/scripts.h"
#include "lua/publish_guard.h"
#include "redisync/config.h"
#include "redisync/errors.h"
#include "support/steps_wire.h"
#include "sync/acquire/grant.h"
#include "sync/client_core.h"

using namespace std::chrono_literals;
using redisync::Config;
using redisync::Duration;
using redisync::Handoff;
using redisync::detail::ClientCore;
using redisync::detail::HoldCountSteps;
namespace lua = redisync::lua;
using redisync::test::RecordTestKind;
using redisync::test::unconnected_core;
using Strings = std::vector<std::string>;

namespace {

constexpr std::int64_t kOwner = 7;
const std::string kName = "orders:42";

redisync::Reply string_reply(const std::string& s) {
  redisync::Reply reply;
  reply.kind = redisync::Reply::Kind::status;
  reply.str = s;
  return reply;
}

TEST(RwLockStepsWire, WakeModeReaderSetsItsMarker) {
  auto core = unconnected_core(Handoff::wake, 20ms);
  auto steps = redisync::detail::read_lock_steps(core, std::make_shared<RecordTestKind>(), kName,
                                                 kOwner, 30s, std::nullopt);
  const std::string field = core->id() + ":7";
  EXPECT_EQ(&steps->script(), &lua::with_publish_guard(lua::rwlock_read_acquire, false));
  EXPECT_EQ(steps->keys(), (Strings{"orders:42", "{orders:42}:" + field + ":rwlock_timeout"}));
  EXPECT_EQ(steps->args(),
            (Strings{"30000", field, field + ":write", "PUBLISH", "redisson_rwlock:{orders:42}"}));
  EXPECT_EQ(steps->channel(), "redisson_rwlock:{orders:42}");
}

TEST(RwLockStepsWire, GrantModeReaderKeepsWritersOutForWhatIsLeftOfItsWait) {
  auto core = unconnected_core(Handoff::grant, 20ms);
  const std::string field = core->id() + ":7";
  auto no_wait_limit = redisync::detail::read_lock_steps(core, std::make_shared<RecordTestKind>(),
                                                         kName, kOwner, 30s, std::nullopt);
  EXPECT_EQ(&no_wait_limit->script(), &lua::with_publish_guard(lua::rwlock_read_acquire, true));
  EXPECT_EQ(no_wait_limit->keys(), (Strings{"orders:42", "{orders:42}:" + field + ":rwlock_timeout",
                                            "redisync_rwlock_readers:{orders:42}"}));
  // The grant lease (2 s), then the guard's grant channel, command and channel.
  EXPECT_EQ(no_wait_limit->args(), (Strings{"30000", field, field + ":write", "2000",
                                            "redisync_grant__channel:{orders:42}:" + core->id(),
                                            "PUBLISH", "redisson_rwlock:{orders:42}"}));
  // A wait that is over keeps no writer out.
  auto over = redisync::detail::read_lock_steps(core, std::make_shared<RecordTestKind>(), kName,
                                                kOwner, 30s, redisync::sync::Clock::now() - 1s);
  EXPECT_EQ(over->args()[3], "0");
}

TEST(RwLockStepsWire, WakeModeWriterWithTheStarvationGuard) {
  auto core = unconnected_core(Handoff::wake, 20ms);
  auto steps = redisync::detail::write_lock_steps(core, std::make_shared<RecordTestKind>(), kName,
                                                  kOwner, 30s, std::nullopt, nullptr);
  const std::string field = core->id() + ":7";
  EXPECT_EQ(&steps->script(), &lua::with_publish_guard(lua::rwlock_write_acquire, false));
  EXPECT_EQ(steps->keys(), (Strings{"orders:42", "redisync_rwlock_guard:{orders:42}"}));
  // lease, writer field, reader field, claim flag, claim expiry (max(5 x 20 ms, 100 ms)).
  EXPECT_EQ(steps->args(), (Strings{"30000", field + ":write", field, "0", "100", "PUBLISH",
                                    "redisson_rwlock:{orders:42}"}));
  EXPECT_EQ(steps->channel(), "redisson_rwlock:{orders:42}");
}

TEST(RwLockStepsWire, WakeModeWriterWithoutTheGuardSendsThreeArguments) {
  auto core = unconnected_core(Handoff::wake, 0ms);
  auto steps = redisync::detail::write_lock_steps(core, std::make_shared<RecordTestKind>(), kName,
                                                  kOwner, 30s, std::nullopt, nullptr);
  const std::string field = core->id() + ":7";
  EXPECT_EQ(steps->keys(), (Strings{"orders:42"}));
  EXPECT_EQ(steps->args(),
            (Strings{"30000", field + ":write", field, "PUBLISH", "redisson_rwlock:{orders:42}"}));
}

TEST(RwLockStepsWire, GrantModeWriterRegistersThroughItsLink) {
  auto core = unconnected_core(Handoff::grant, 20ms);
  auto kind = std::make_shared<RecordTestKind>();
  struct Seen {
    const lua::Script* script;
    Strings keys, args, deregister;
    std::string id;
  };
  const Seen seen = core->call<Seen>([&](auto done) {
    auto link = redisync::detail::grant_link(core, *kind, kName, kOwner);  // I/O thread
    link->listed = true;  // as the loop's start does
    auto steps =
        redisync::detail::write_lock_steps(core, kind, kName, kOwner, 30s, std::nullopt, link);
    done(nullptr, Seen{&steps->script(), steps->keys(), steps->args(), link->deregister, link->id});
  });
  const std::string field = core->id() + ":7";
  EXPECT_EQ(seen.script, &lua::with_publish_guard(lua::rwlock_write_grant_acquire, true));
  // No guard in grant mode: the grant keys, and the waiting readers' key.
  EXPECT_EQ(seen.keys,
            (Strings{"orders:42", "redisync_rwlock_grant:{orders:42}",
                     "redisync_rwlock_grant_id:{orders:42}", "redisync_grant_mark:{orders:42}",
                     "redisync_rwlock_readers:{orders:42}"}));
  // lease, writer, reader, registration period ("0": not registering yet), grant id, attempt.
  EXPECT_EQ(seen.args, (Strings{"30000", field + ":write", field, "0", seen.id, "1",
                                "redisync_grant__channel:{orders:42}:" + core->id(), "PUBLISH",
                                "redisson_rwlock:{orders:42}"}));
  EXPECT_EQ(seen.deregister,
            (Strings{"ZREM", "redisync_rwlock_grant:{orders:42}", field + ":write"}));
}

TEST(RwLockStepsWire, AWriterRefusedForItsOwnReadHoldIsAnUpgradeError) {
  auto core = unconnected_core(Handoff::wake, 0ms);
  auto steps = redisync::detail::write_lock_steps(core, std::make_shared<RecordTestKind>(), kName,
                                                  kOwner, 30s, std::nullopt, nullptr);
  EXPECT_THROW(steps->parse(string_reply("upgrade")), redisync::UpgradeError);
}

}  // namespace
