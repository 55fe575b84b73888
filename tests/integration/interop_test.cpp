// Interoperability with a Redisson-layout client on the same server. The "Java side" here is
// written from the wire spec with raw commands over a separate connection (the fixture's admin
// connection), exactly as Redisson's scripts act: hash field "<uuid>:<thread id>" -> count,
// expiry in ms, release message "0" on redisson_lock__channel:{name}.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "redisync/redisync.h"
#include "support/redis_server.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

const std::string kJavaOwner = "8f1c2c4e-3b7a-4c1e-9d2f-0a1b2c3d4e5f:57";

// Redisson 4.x RLock acquire (docs/wire-format.md §2.2) as the Java client runs it.
redisync::test::Reply java_try_acquire(RedisServer& server, const std::string& name,
                                       long long lease_ms) {
  return server.command(
      {"EVAL",
       "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == "
       "1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], "
       "ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);",
       "1", name, std::to_string(lease_ms), kJavaOwner});
}

// Redisson 4.x RLock release (docs/wire-format.md §2.3), with its release record.
redisync::test::Reply java_release(RedisServer& server, const std::string& name) {
  const std::string tag = name.find('{') == std::string::npos ? "{" + name + "}" : name;
  return server.command(
      {"EVAL",
       "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val); end; "
       "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; "
       "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
       "if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); "
       "redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else "
       "redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); "
       "redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end;",
       "3", name, "redisson_lock__channel:" + tag,
       "redisson_unlock_latch:" + tag + ":0123456789abcdef0123456789abcdef", "0", "30000",
       kJavaOwner, "PUBLISH", "13500"});
}

}  // namespace

TEST(InteropTest, JavaHolderExcludesUsAndItsReleaseWakesOurWaiter) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("shared:");
  ASSERT_TRUE(java_try_acquire(server, name, 60000).is_nil());  // Java holds it

  auto lock = client.lock(name);
  EXPECT_FALSE(lock.try_lock());
  EXPECT_TRUE(lock.is_locked());
  EXPECT_FALSE(lock.is_held_by_current_thread());
  EXPECT_THROW(lock.unlock_checked(), redisync::NotOwnerError);

  auto waiter = std::async(std::launch::async, [&] { return lock.try_lock_for(20s); });
  ASSERT_TRUE(wait_until(
      [&] { return !server.command({"PUBSUB", "CHANNELS"}).elements.empty(); }, 3s));
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(java_release(server, name).as_integer(), 1);  // publishes "0"
  ASSERT_EQ(waiter.wait_for(5s), std::future_status::ready);  // woken, not after 60 s
}

TEST(InteropTest, OurHolderExcludesJavaAndOurReleaseIsWhatJavaListensFor) {
  RedisServer server;
  redisync::Client client(server.url());
  const auto name = unique_name("shared:");
  auto lock = client.lock(name);
  lock.lock();

  // Java sees it held (PTTL reply) and its field layout is ours.
  auto attempt = java_try_acquire(server, name, 30000);
  ASSERT_FALSE(attempt.is_nil());
  EXPECT_GT(attempt.as_integer(), 0);
  auto fields = server.command({"HGETALL", name});
  ASSERT_EQ(fields.elements.size(), 2u);
  EXPECT_EQ(fields.elements[0].as_string(),
            client.id() + ":" + std::to_string(redisync::Client::current_thread_id()));
  EXPECT_EQ(fields.elements[1].as_string(), "1");
  EXPECT_EQ(client.id().size(), 36u);

  // A Java waiter listens on the two-underscore channel with the braced name.
  const std::string channel = "redisson_lock__channel:{" + name + "}";
  std::promise<std::string> heard;
  std::jthread listener([&] {
    // A plain subscriber that is not redisync: redis-cli, bounded to 3 s.
    auto r = redisync::test::run_process(
        {"redis-cli", "-p", std::to_string(server.port()), "--no-raw", "SUBSCRIBE", channel},
        3s);
    heard.set_value(r.output);
  });
  ASSERT_TRUE(wait_until(
      [&] {
        auto n = server.command({"PUBSUB", "NUMSUB", channel});
        return n.elements.size() == 2 && n.elements[1].as_integer() == 1;
      },
      3s));
  lock.unlock();
  listener.join();
  const std::string out = heard.get_future().get();
  EXPECT_NE(out.find("\"message\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"0\""), std::string::npos) << out;  // Redisson's unlock message
  EXPECT_TRUE(java_try_acquire(server, name, 30000).is_nil());  // now Java gets it
}

TEST(InteropTest, BracedNamesKeepRedissonsTagRule) {
  RedisServer server;
  redisync::Client client(server.url());
  auto lock = client.lock("{user:7}:profile");
  lock.lock();
  // A name that already contains '{' is used unchanged in derived keys (docs/wire-format.md §1.1).
  auto waiter = std::async(std::launch::async, [&] {
    redisync::Client other(server.url());
    return other.lock("{user:7}:profile").try_lock_for(10s);
  });
  ASSERT_TRUE(wait_until(
      [&] {
        auto ch = server.command({"PUBSUB", "CHANNELS"});
        return ch.elements.size() == 1 &&
               ch.elements[0].as_string() == "redisson_lock__channel:{user:7}:profile";
      },
      3s));
  lock.unlock();
  EXPECT_TRUE(waiter.get());
}
