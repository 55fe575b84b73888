// SPDX-License-Identifier: Apache-2.0
// Self-test of the integration fixture (tests/support): real redis-server processes.
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <thread>

#include "support/redis_server.h"
#include "support/test_util.h"

namespace redisync::test {
namespace {

using namespace std::chrono_literals;

struct ContextDeleter {
  void operator()(redisContext* ctx) const { redisFree(ctx); }
};
using Context = std::unique_ptr<redisContext, ContextDeleter>;

struct ReplyDeleter {
  void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using RawReply = std::unique_ptr<redisReply, ReplyDeleter>;

// A raw hiredis TCP connection with 200 ms connect and command timeouts.
Context raw_connect(std::uint16_t port) {
  const timeval tv{0, 200 * 1000};
  Context ctx(redisConnectWithTimeout("127.0.0.1", port, tv));
  if (ctx && ctx->err == 0) redisSetTimeout(ctx.get(), tv);
  return ctx;
}

RawReply raw_command(redisContext* ctx, const char* format) {
  return RawReply(static_cast<redisReply*>(redisCommand(ctx, format)));
}

RawReply raw_command(redisContext* ctx, const char* format, const char* a, const char* b) {
  return RawReply(static_cast<redisReply*>(redisCommand(ctx, format, a, b)));
}

TEST(FixtureTest, StartsAndAnswersPing) {
  RedisServer server;
  EXPECT_EQ(server.host(), "127.0.0.1");
  EXPECT_NE(server.port(), 0);
  EXPECT_EQ(server.tls_port(), 0);
  EXPECT_TRUE(server.running());
  EXPECT_GT(server.pid(), 0);
  EXPECT_EQ(server.url(), "redis://127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(server.command({"PING"}).as_string(), "PONG");
  EXPECT_NE(server.log_tail().find("Ready to accept connections"), std::string::npos);
}

TEST(FixtureTest, SetGetAndReplyKinds) {
  RedisServer server;
  EXPECT_EQ(server.command({"SET", "foo", "bar"}).as_string(), "OK");
  EXPECT_EQ(server.command({"GET", "foo"}).as_string(), "bar");
  EXPECT_TRUE(server.command({"GET", "missing"}).is_nil());
  EXPECT_EQ(server.command({"INCRBY", "n", "41"}).as_integer(), 41);
  const std::string binary("a\0b", 3);
  server.command(std::vector<std::string>{"SET", "bin", binary});
  EXPECT_EQ(server.command({"GET", "bin"}).as_string(), binary);

  server.command({"RPUSH", "list", "x", "y"});
  const Reply list = server.command({"LRANGE", "list", "0", "-1"});
  ASSERT_EQ(list.kind, Reply::Kind::array);
  ASSERT_EQ(list.elements.size(), 2u);
  EXPECT_EQ(list.elements[1].as_string(), "y");

  const Reply error = server.command({"NOSUCHCOMMAND"});
  EXPECT_TRUE(error.is_error());
  EXPECT_THROW(error.as_string(), std::runtime_error);
  EXPECT_THROW(list.as_integer(), std::runtime_error);
}

TEST(FixtureTest, KillStopsServerAndConnectingFails) {
  RedisServer server;
  const pid_t pid = server.pid();
  server.kill();
  EXPECT_FALSE(server.running());
  EXPECT_EQ(server.pid(), -1);
  EXPECT_NE(::kill(pid, 0), 0);  // reaped, gone
  Context ctx = raw_connect(server.port());
  ASSERT_TRUE(ctx);
  EXPECT_NE(ctx->err, 0);
  EXPECT_THROW(server.command({"PING"}), std::runtime_error);
  server.kill();  // idempotent
}

TEST(FixtureTest, RestartKeepsPortAndAdminReconnects) {
  RedisServer server;
  const std::uint16_t port = server.port();
  const pid_t old_pid = server.pid();
  server.command({"SET", "k", "v"});
  server.restart();
  EXPECT_TRUE(server.running());
  EXPECT_EQ(server.port(), port);
  EXPECT_NE(server.pid(), old_pid);
  EXPECT_EQ(server.command({"PING"}).as_string(), "PONG");
  EXPECT_TRUE(server.command({"GET", "k"}).is_nil());  // no persistence by default

  // restart() from the killed state works too.
  server.kill();
  server.restart();
  EXPECT_EQ(server.port(), port);
  Context ctx = raw_connect(port);
  ASSERT_TRUE(ctx && ctx->err == 0);
  RawReply pong = raw_command(ctx.get(), "PING");
  ASSERT_TRUE(pong);
  EXPECT_STREQ(pong->str, "PONG");
}

TEST(FixtureTest, PauseTimesOutAndResumeRecovers) {
  RedisServer server;
  server.pause();
  EXPECT_TRUE(server.running());
  Context ctx = raw_connect(server.port());
  ASSERT_TRUE(ctx);
  // The kernel still completes the TCP handshake (listen backlog); the command times out.
  if (ctx->err == 0) {
    const auto start = std::chrono::steady_clock::now();
    RawReply reply = raw_command(ctx.get(), "PING");
    EXPECT_FALSE(reply);
    EXPECT_NE(ctx->err, 0);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  }
  server.set_command_timeout(300ms);
  EXPECT_THROW(server.command({"PING"}), std::runtime_error);
  server.set_command_timeout(10s);

  server.resume();
  EXPECT_EQ(server.command({"PING"}).as_string(), "PONG");
  Context fresh = raw_connect(server.port());
  ASSERT_TRUE(fresh && fresh->err == 0);
  RawReply pong = raw_command(fresh.get(), "PING");
  ASSERT_TRUE(pong);
  EXPECT_STREQ(pong->str, "PONG");
}

TEST(FixtureTest, StopShutsDownCleanlyEvenWhenPaused) {
  RedisServer server;
  server.pause();
  const auto start = std::chrono::steady_clock::now();
  server.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);  // SIGTERM honoured, no SIGKILL
  EXPECT_FALSE(server.running());
  EXPECT_NE(server.log_tail().find("ready to exit"), std::string::npos) << server.log_tail();
  server.restart();
  EXPECT_EQ(server.command({"PING"}).as_string(), "PONG");
}

TEST(FixtureTest, PasswordServerRequiresAuth) {
  RedisServer server({.password = "s3cret"});
  EXPECT_EQ(server.url(), "redis://:s3cret@127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(server.command({"PING"}).as_string(), "PONG");  // admin authenticates

  Context ctx = raw_connect(server.port());
  ASSERT_TRUE(ctx && ctx->err == 0);
  RawReply denied = raw_command(ctx.get(), "GET foo");
  ASSERT_TRUE(denied);
  ASSERT_EQ(denied->type, REDIS_REPLY_ERROR);
  EXPECT_EQ(std::string(denied->str).rfind("NOAUTH", 0), 0u) << denied->str;

  RawReply auth = raw_command(ctx.get(), "AUTH s3cret");
  ASSERT_TRUE(auth);
  EXPECT_EQ(auth->type, REDIS_REPLY_STATUS);
}

TEST(FixtureTest, AclUserCanAuthenticate) {
  RedisServer server({.password = "adminpw", .acl_user = "alice", .acl_password = "p@ss word"});
  EXPECT_EQ(server.url(), "redis://alice:p%40ss%20word@127.0.0.1:" + std::to_string(server.port()));
  EXPECT_EQ(server.command({"ACL", "WHOAMI"}).as_string(), "default");

  Context ctx = raw_connect(server.port());
  ASSERT_TRUE(ctx && ctx->err == 0);
  RawReply auth = raw_command(ctx.get(), "AUTH %s %s", "alice", "p@ss word");
  ASSERT_TRUE(auth);
  EXPECT_EQ(auth->type, REDIS_REPLY_STATUS) << auth->str;
  RawReply who = raw_command(ctx.get(), "ACL WHOAMI");
  ASSERT_TRUE(who);
  EXPECT_STREQ(who->str, "alice");

  RawReply wrong = raw_command(ctx.get(), "AUTH %s %s", "alice", "nope");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->type, REDIS_REPLY_ERROR);

  // The user survives a restart (it is part of the command line, not runtime state).
  server.restart();
  Context again = raw_connect(server.port());
  ASSERT_TRUE(again && again->err == 0);
  auth = raw_command(again.get(), "AUTH %s %s", "alice", "p@ss word");
  ASSERT_TRUE(auth);
  EXPECT_EQ(auth->type, REDIS_REPLY_STATUS) << auth->str;
}

TEST(FixtureTest, AclUserWithoutDefaultPassword) {
  RedisServer server({.acl_user = "bob", .acl_password = "pw"});
  EXPECT_EQ(server.command({"PING"}).as_string(), "PONG");
  EXPECT_EQ(server.command({"AUTH", "bob", "pw"}).as_string(), "OK");
  EXPECT_EQ(server.command({"ACL", "WHOAMI"}).as_string(), "bob");
}

TEST(FixtureTest, TlsServer) {
  RedisServer server({.tls = true});
  ASSERT_NE(server.tls_port(), 0);
  EXPECT_NE(server.tls_port(), server.port());
  for (const auto& file : {server.ca_file(), server.client_cert_file(), server.client_key_file()}) {
    EXPECT_TRUE(std::filesystem::exists(file)) << file;
  }
  EXPECT_NE(server.log_tail().find("Ready to accept connections"), std::string::npos);
  EXPECT_EQ(server.tls_url(), "rediss://127.0.0.1:" + std::to_string(server.tls_port()) +
                                  "?ca_file=" + server.ca_file() +
                                  "&cert_file=" + server.client_cert_file() +
                                  "&key_file=" + server.client_key_file());
  EXPECT_EQ(server.command({"PING"}).as_string(), "PONG");  // admin uses the plain port

  // Real handshake with hostname/IP verification against our CA, with the client cert.
  const ProcessResult check = run_process(
      {"openssl", "s_client", "-connect", "127.0.0.1:" + std::to_string(server.tls_port()),
       "-CAfile", server.ca_file(), "-cert", server.client_cert_file(), "-key",
       server.client_key_file(), "-verify_return_error", "-verify_ip", "127.0.0.1", "-brief"},
      10s);
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_NE(check.output.find("Verification: OK"), std::string::npos) << check.output;

  // A second TLS server reuses the same (process-wide) certificates.
  RedisServer second({.tls = true});
  EXPECT_EQ(second.ca_file(), server.ca_file());
}

TEST(FixtureTest, PersistenceSurvivesRestart) {
  RedisServer server({.persistence = true});
  server.command({"SET", "durable", "yes"});
  server.restart();  // SIGKILL: relies on appendfsync always
  EXPECT_EQ(server.command({"GET", "durable"}).as_string(), "yes");
  server.stop();
  server.restart();
  EXPECT_EQ(server.command({"GET", "durable"}).as_string(), "yes");
}

TEST(FixtureTest, UnixSocket) {
  RedisServer server({.password = "pw", .unix_socket = true});
  ASSERT_FALSE(server.unix_socket_path().empty());
  EXPECT_EQ(server.unix_url(), "unix://" + server.unix_socket_path() + "?password=pw");
  const timeval tv{1, 0};
  Context ctx(redisConnectUnixWithTimeout(server.unix_socket_path().c_str(), tv));
  ASSERT_TRUE(ctx);
  ASSERT_EQ(ctx->err, 0) << ctx->errstr;
  RawReply auth = raw_command(ctx.get(), "AUTH pw");
  ASSERT_TRUE(auth);
  RawReply pong = raw_command(ctx.get(), "PING");
  ASSERT_TRUE(pong);
  EXPECT_STREQ(pong->str, "PONG");
}

TEST(FixtureTest, ReplicaViaExtraArgs) {
  RedisServer master;
  RedisServer replica({.extra_args = {"--replicaof", "127.0.0.1", std::to_string(master.port())}});
  master.command({"SET", "replicated", "1"});
  EXPECT_TRUE(wait_until(
      [&] {
        const Reply value = replica.command({"GET", "replicated"});
        return !value.is_nil() && value.as_string() == "1";
      },
      5s));
}

TEST(FixtureTest, ServerOutlivesTheThreadThatStartedIt) {
  // PR_SET_PDEATHSIG is tied to the forking thread; the fixture forks on a long-lived thread.
  std::unique_ptr<RedisServer> server;
  std::thread([&] { server = std::make_unique<RedisServer>(); }).join();
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(server->running());
  EXPECT_EQ(server->command({"PING"}).as_string(), "PONG");
}

TEST(FixtureTest, AdminReconnectsAfterClientKill) {
  RedisServer server;
  server.command({"PING"});
  server.command({"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "no"});
  EXPECT_EQ(server.command({"PING"}).as_string(), "PONG");
}

TEST(FixtureTest, ManyServersGetDistinctPortsAndDirs) {
  std::vector<std::unique_ptr<RedisServer>> servers;
  std::set<std::uint16_t> ports;
  std::set<std::string> dirs;
  for (int i = 0; i < 4; ++i) {
    servers.push_back(std::make_unique<RedisServer>());
    ports.insert(servers.back()->port());
    dirs.insert(servers.back()->dir());
  }
  EXPECT_EQ(ports.size(), 4u);
  EXPECT_EQ(dirs.size(), 4u);
  const std::string dir = servers[0]->dir();
  servers[0].reset();
  EXPECT_FALSE(std::filesystem::exists(dir));  // destructor removes the temp dir
}

TEST(FixtureTest, BadOptionFailsFastWithLog) {
  try {
    RedisServer server({.extra_args = {"--no-such-directive", "1"}});
    FAIL() << "expected startup failure";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-directive"), std::string::npos) << e.what();
  }
}

TEST(FixtureUtilTest, WaitUntil) {
  int calls = 0;
  EXPECT_TRUE(wait_until([&] { return ++calls == 3; }, 1s, 1ms));
  EXPECT_EQ(calls, 3);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(wait_until([] { return false; }, 50ms));
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_GE(elapsed, 50ms);
  EXPECT_LT(elapsed, 1s);
}

TEST(FixtureUtilTest, UniqueNameAndTempFile) {
  const std::string a = unique_name("lock:");
  const std::string b = unique_name("lock:");
  EXPECT_NE(a, b);
  EXPECT_EQ(a.rfind("lock:", 0), 0u);
  EXPECT_EQ(a.size(), 5u + 16u);

  const std::string f1 = temp_file("data.txt");
  const std::string f2 = temp_file("data.txt");
  EXPECT_NE(f1, f2);
  EXPECT_EQ(std::filesystem::path(f1).parent_path(), process_temp_dir());
  std::ofstream(f1) << "x";
  EXPECT_TRUE(std::filesystem::exists(f1));
}

TEST(FixtureUtilTest, RunProcess) {
  const ProcessResult ok = run_process({"sh", "-c", "echo hi; echo err >&2; exit 3"});
  EXPECT_EQ(ok.exit_code, 3);
  EXPECT_FALSE(ok.timed_out);
  EXPECT_NE(ok.output.find("hi"), std::string::npos);
  EXPECT_NE(ok.output.find("err"), std::string::npos);

  const ProcessResult slow = run_process({"sleep", "10"}, 100ms);
  EXPECT_TRUE(slow.timed_out);

  const ProcessResult missing = run_process({"/nonexistent/binary"});
  EXPECT_EQ(missing.exit_code, 127);
}

}  // namespace
}  // namespace redisync::test
