// SPDX-License-Identifier: Apache-2.0
// The connection layer through the public Client: pipelining, timeouts, reconnects, AUTH,
// SELECT, CLIENT SETNAME, TLS, unix sockets, NOSCRIPT reload. Real redis-server processes.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "redisync/redisync.h"
#include "sync/caller_intake.h"
#include "support/fault_proxy.h"
#include "support/redis_server.h"
#include "support/server_pause.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::test::answers_again;
using redisync::test::RedisServer;
using redisync::test::ServerOptions;
using redisync::test::wait_until;

namespace {

redisync::Config fast_config(const std::string& url) {
  auto cfg = redisync::Config::from_url(url);
  cfg.timeout = 500ms;
  cfg.connect_timeout = 1000ms;
  cfg.retry_attempts = 0;
  cfg.reconnection_delay_min = 20ms;
  cfg.reconnection_delay_max = 200ms;
  return cfg;
}

}  // namespace

TEST(ClientTest, SetGetAndErrorReplies) {
  RedisServer server;
  redisync::Client client(server.url());
  EXPECT_EQ(client.execute({"PING"}).str, "PONG");
  client.execute({"SET", "k", "v"});
  EXPECT_EQ(client.execute({"GET", "k"}).str, "v");
  EXPECT_TRUE(client.execute({"GET", "missing"}).is_nil());
  client.execute({"RPUSH", "list", "a"});
  try {
    client.execute({"GET", "list"});
    FAIL() << "expected ServerError";
  } catch (const redisync::ServerError& e) {
    EXPECT_NE(std::string(e.what()).find("WRONGTYPE"), std::string::npos) << e.what();
    EXPECT_EQ(e.reply().rfind("WRONGTYPE", 0), 0u);
  }
  EXPECT_THROW(client.execute({}), redisync::InvalidArgument);
}

TEST(ClientTest, PipelinedCommandsFromEightThreadsAreAnsweredInOrder) {
  RedisServer server;
  redisync::Client client(server.url());
  constexpr int kThreads = 8;
  constexpr int kPerThread = 1250;  // 10,000 in all
  std::vector<std::jthread> threads;
  std::atomic<int> out_of_order{0};
  std::atomic<int> answered{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string key = "counter:" + std::to_string(t);
      // Shared with the callbacks: the last one may still be running when this thread returns.
      auto all = std::make_shared<std::promise<void>>();
      auto last = std::make_shared<long long>(0);
      auto count = std::make_shared<int>(0);
      auto m = std::make_shared<std::mutex>();
      for (int i = 0; i < kPerThread; ++i) {
        client.async_execute({"INCR", key}, [&, all, last, count, m](std::exception_ptr e,
                                                                     redisync::Reply r) {
          bool done = false;
          {
            std::lock_guard g(*m);
            if (e || r.integer != *last + 1) ++out_of_order;
            *last = r.integer;
            ++answered;
            done = ++*count == kPerThread;
          }
          if (done) all->set_value();
        });
      }
      all->get_future().wait_for(30s);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(answered.load(), kThreads * kPerThread);
  EXPECT_EQ(out_of_order.load(), 0);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(server.command({"GET", "counter:" + std::to_string(t)}).as_string(),
              std::to_string(kPerThread));
  }
}

TEST(ClientTest, ServerKilledMidPipelineFailsEveryPendingRequest) {
  RedisServer server;
  redisync::Client client(fast_config(server.url()));
  client.execute({"PING"});
  constexpr int kRequests = 20000;
  std::atomic<int> ok{0}, connection_errors{0}, other{0};
  std::atomic<int> done{0};
  for (int i = 0; i < kRequests; ++i) {
    client.async_execute({"INCR", "n"}, [&](std::exception_ptr e, redisync::Reply) {
      if (!e) {
        ++ok;
      } else {
        try {
          std::rethrow_exception(e);
        } catch (const redisync::ConnectionError&) {
          ++connection_errors;
        } catch (...) {
          ++other;
        }
      }
      ++done;
    });
    if (i == kRequests / 4) server.kill();
  }
  ASSERT_TRUE(wait_until([&] { return done.load() == kRequests; }, 10s))
      << done.load() << " of " << kRequests << " answered";
  EXPECT_GT(connection_errors.load(), 0);
  EXPECT_EQ(ok + connection_errors + other, kRequests);
}

TEST(ClientTest, CommandsSucceedAgainAfterServerRestart) {
  RedisServer server;
  redisync::Client client(fast_config(server.url()));
  client.execute({"SET", "a", "1"});
  server.kill();
  EXPECT_THROW(client.execute({"PING"}), redisync::ConnectionError);
  server.restart();
  EXPECT_TRUE(answers_again(client));
}

TEST(ClientTest, RetriesBridgeAShortOutage) {
  RedisServer server;
  auto cfg = fast_config(server.url());
  cfg.retry_attempts = 20;
  cfg.retry_interval = 100ms;
  redisync::Client client(cfg);
  client.execute({"PING"});
  server.kill();
  // Let the client see the connection drop first: a request written to the dying socket may
  // have reached the server, and such requests are (rightly) not resent.
  std::this_thread::sleep_for(200ms);
  std::jthread restarter([&] {
    std::this_thread::sleep_for(300ms);
    server.restart();
  });
  EXPECT_EQ(client.execute({"PING"}).str, "PONG");  // retried until the server is back
  restarter.join();
}

TEST(ClientTest, PausedServerGivesTimeoutError) {
  RedisServer server;
  redisync::Client client(fast_config(server.url()));
  client.execute({"PING"});
  server.pause();
  EXPECT_THROW(client.execute({"PING"}), redisync::TimeoutError);
  server.resume();
  EXPECT_TRUE(answers_again(client));
}

TEST(ClientTest, UnreachableServerGivesConnectionError) {
  std::uint16_t port;
  {
    RedisServer server;
    port = server.port();
  }  // stopped: nothing listens there now
  redisync::Client client(fast_config("redis://127.0.0.1:" + std::to_string(port)));
  EXPECT_THROW(client.execute({"PING"}), redisync::ConnectionError);
}

TEST(ClientTest, PasswordAuthAndClearErrors) {
  RedisServer server({.password = "s3cret"});
  redisync::Client good(server.url());
  EXPECT_EQ(good.execute({"PING"}).str, "PONG");

  auto wrong = fast_config("redis://:wrong@127.0.0.1:" + std::to_string(server.port()));
  redisync::Client bad(wrong);
  try {
    bad.execute({"PING"});
    FAIL() << "expected AuthError";
  } catch (const redisync::AuthError& e) {
    EXPECT_NE(std::string(e.what()).find("authentication failed"), std::string::npos);
  }

  redisync::Client none(fast_config("redis://127.0.0.1:" + std::to_string(server.port())));
  try {
    none.execute({"PING"});
    FAIL() << "expected AuthError";
  } catch (const redisync::AuthError& e) {
    // No password configured: the server's NOAUTH is a configuration error, said as such.
    EXPECT_NE(std::string(e.what()).find("NOAUTH"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("password"), std::string::npos) << e.what();
  }
}

TEST(ClientTest, AclUserAuth) {
  RedisServer server({.acl_user = "app", .acl_password = "pw"});
  redisync::Client client(server.url());
  EXPECT_EQ(client.execute({"ACL", "WHOAMI"}).str, "app");
}

TEST(ClientTest, SelectsDatabaseAndSetsClientName) {
  RedisServer server;
  auto cfg = redisync::Config::from_url(server.url() + "/3");
  cfg.client_name = "redisync-test";
  redisync::Client client(cfg);
  client.execute({"SET", "in-db-3", "yes"});
  EXPECT_TRUE(server.command({"GET", "in-db-3"}).is_nil());
  EXPECT_EQ(server.command({"EVAL", "redis.call('select', 3) return redis.call('get', KEYS[1])",
                            "1", "in-db-3"})
                .as_string(),
            "yes");
  EXPECT_NE(server.command({"CLIENT", "LIST"}).as_string().find("name=redisync-test"),
            std::string::npos);
}

TEST(ClientTest, UnixSocket) {
  RedisServer server({.unix_socket = true});
  redisync::Client client(server.unix_url());
  EXPECT_EQ(client.execute({"PING"}).str, "PONG");
}

TEST(ClientTest, TlsWithTestCa) {
  RedisServer server({.tls = true});
  redisync::Client client(server.tls_url());
  EXPECT_EQ(client.execute({"PING"}).str, "PONG");
  client.execute({"SET", "over-tls", "1"});
  EXPECT_EQ(server.command({"GET", "over-tls"}).as_string(), "1");
}

TEST(ClientTest, TlsRejectsServerNotSignedByTrustedCa) {
  RedisServer server({.tls = true});
  auto cfg = fast_config("rediss://127.0.0.1:" + std::to_string(server.tls_port()));
  cfg.tls_options.ca_file = server.client_cert_file();  // not a CA: verification must fail
  cfg.tls_options.cert_file = server.client_cert_file();
  cfg.tls_options.key_file = server.client_key_file();
  redisync::Client client(cfg);
  EXPECT_THROW(client.execute({"PING"}), redisync::ConnectionError);
}

TEST(ClientTest, ScriptFlushIsTransparent) {
  RedisServer server;
  redisync::Client client(server.url());
  auto lock = client.lock("flush-me");
  for (int i = 0; i < 5; ++i) {
    lock.lock();
    server.command({"SCRIPT", "FLUSH"});
    lock.unlock();
    server.command({"SCRIPT", "FLUSH"});
  }
  EXPECT_FALSE(lock.is_locked());
}

TEST(ClientTest, AsyncExecuteWithFuture) {
  RedisServer server;
  redisync::Client client(server.url());
  std::promise<redisync::Reply> p;
  client.async_execute({"ECHO", "hi"}, [&](std::exception_ptr e, redisync::Reply r) {
    if (e) {
      p.set_exception(e);
    } else {
      p.set_value(std::move(r));
    }
  });
  EXPECT_EQ(p.get_future().get().str, "hi");
}

// Issue 34: a burst of async calls on one Client must not hold back the work of the holds it
// already has. Each call's start used to be one handler on the I/O thread's queue, ahead of
// the timers and replies that came after it: a lock held in watchdog mode was reported lost
// while the I/O thread was still starting the burst, its renewal never sent in time. The
// starts now run a batch per turn of the event loop (CallerIntake), with timers and replies
// between two batches.
TEST(ClientTest, AHeldLockIsRenewedWhileTheClientStartsAHundredThousandCalls) {
  RedisServer server;
  // Renewed every 333 ms, reported lost 900 ms after its last confirmed renewal: far less
  // than the time the I/O thread needs to start the whole burst.
  auto cfg = redisync::Config::from_url(server.url());
  cfg.lock_watchdog_timeout = 1000ms;
  redisync::Client client(cfg);
  std::atomic<int> lost{0};
  client.on_lock_lost([&](const redisync::LockLostEvent&) { ++lost; });
  auto lock = client.lock("burst:held");
  lock.lock();

  constexpr int kCalls = 100'000;
  std::mutex m;
  std::condition_variable cv;
  int answered = 0;
  int failed = 0;
  for (int i = 0; i < kCalls; ++i) {
    client.async_execute({"PING"}, [&](std::exception_ptr error, redisync::Reply reply) {
      std::lock_guard g(m);
      ++answered;
      if (error || reply.str != "PONG") ++failed;
      cv.notify_all();
    });
  }
  {
    std::unique_lock g(m);
    ASSERT_TRUE(cv.wait_for(g, 300s, [&] { return answered == kCalls; }))
        << answered << " calls answered";
    EXPECT_EQ(failed, 0);
  }
  EXPECT_EQ(lost.load(), 0) << "the held lock was reported lost during the burst";
  EXPECT_TRUE(lock.is_held_by_current_thread());
  EXPECT_EQ(redisync::Client(server.url()).execute({"EXISTS", "burst:held"}).integer, 1);
  lock.unlock();
  EXPECT_EQ(lost.load(), 0);
}

// Issue 34: a burst is sent no faster than the server answers. Started all at once, 100,000
// acquisitions each kept their request and state alive until answered, and the pages they
// left behind kept the Client's memory at three times its live heap. The calls past
// CallerIntake::kMaxInFlight unanswered requests wait in the intake. Replies here are 300 ms
// late (fault proxy): sampled while the burst runs, the requests the server was sent less the
// calls answered never exceed about kMaxInFlight (the old intake sent the whole burst before
// the first reply came back). Every call is answered.
namespace {
struct Burst {
  std::shared_ptr<std::atomic<int>> answered = std::make_shared<std::atomic<int>>(0);
  std::shared_future<int> failed;  // how many failed, set once all are answered
};
// Fires `calls` PINGs on `client`.
Burst ping_burst(redisync::Client& client, int calls) {
  Burst burst;
  auto failed = std::make_shared<std::atomic<int>>(0);
  auto all = std::make_shared<std::promise<int>>();
  burst.failed = all->get_future().share();
  for (int i = 0; i < calls; ++i) {
    client.async_execute({"PING"}, [answered = burst.answered, failed, all, calls](
                                       std::exception_ptr error, redisync::Reply r) {
      if (error || r.str != "PONG") ++*failed;
      if (++*answered == calls) all->set_value(failed->load());
    });
  }
  return burst;
}
}  // namespace

TEST(ClientTest, ABurstOfCallsIsSentNoFasterThanTheServerAnswers) {
  RedisServer server;
  redisync::test::FaultProxy proxy(server.port());
  redisync::Client client(proxy.url());
  client.execute({"PING"});
  proxy.set_delay(redisync::test::Direction::to_client, 300ms);
  const long long before = proxy.stats().requests;
  constexpr int kCalls = 5000;
  const auto burst = ping_burst(client, kCalls);
  // A turn of the intake may start its batch on top of a backlog just under the bound, and a
  // reply read may be counted in flight a little longer than by its call's handler.
  using redisync::detail::CallerIntake;
  const long long bound =
      static_cast<long long>(CallerIntake::kMaxInFlight + 2 * CallerIntake::kPerTurn);
  long long most_unanswered = 0;
  for (int i = 0; i < 3000 && burst.failed.wait_for(20ms) != std::future_status::ready; ++i) {
    const long long sent = proxy.stats().requests - before;  // read first: answered only grows
    most_unanswered = std::max(most_unanswered, sent - burst.answered->load());
  }
  ASSERT_EQ(burst.failed.wait_for(0s), std::future_status::ready) << "the burst did not end";
  EXPECT_EQ(burst.failed.get(), 0);
  EXPECT_GT(most_unanswered, 0);
  EXPECT_LE(most_unanswered, bound) << "more of the burst was sent than the server had answered";
  EXPECT_GE(proxy.stats().requests - before, kCalls);  // the burst, and any periodic check
}

// ... and a server that stopped answering holds nothing back: once its oldest reply is
// CallerIntake::kStalledReplies late, the rest of the burst is sent (and, were the stall to
// last, would time out as each call's own timeout says). The replies held in the network are
// delivered when it ends, and every call is answered.
TEST(ClientTest, ABurstIsNotHeldBackByAServerThatStoppedAnswering) {
  RedisServer server;
  redisync::test::FaultProxy proxy(server.port());
  auto cfg = redisync::Config::from_url(proxy.url());
  cfg.timeout = 10s;
  redisync::Client client(cfg);
  client.execute({"PING"});
  proxy.set_blackhole(redisync::test::Direction::to_client, true);
  const long long before = proxy.stats().requests;
  constexpr int kCalls = 5000;
  const auto burst = ping_burst(client, kCalls);
  // The burst, and any periodic check of the Client's own.
  EXPECT_TRUE(wait_until([&] { return proxy.stats().requests - before >= kCalls; }, 5s))
      << proxy.stats().requests - before << " of " << kCalls << " sent during the stall";
  EXPECT_EQ(burst.answered->load(), 0);  // the stall held every reply
  proxy.set_blackhole(redisync::test::Direction::to_client, false);
  ASSERT_EQ(burst.failed.wait_for(60s), std::future_status::ready);
  EXPECT_EQ(burst.failed.get(), 0);
}

// A written request times out when the server stops answering, not when it answers a long
// pipeline ahead of it (issue 34: 100,000 waiters on one Client failed with "no reply within
// 3012 ms" while the server worked through their attempts). 100 calls of a script that keeps
// the server busy several ms each (a counted loop: TIME stands still inside a script), all
// sent at once with a 250 ms timeout: the last answer comes long after 250 ms, yet replies
// keep arriving. None may time out. Each call carries a 20 KB argument: the server reads 16 KB
// per turn of its loop and sends the replies of a turn at its end, so small calls would all
// run in one turn and be answered together after it.
TEST(ClientTest, ARequestBehindAPipelineTheServerIsAnsweringDoesNotTimeOut) {
  RedisServer server;
  auto cfg = redisync::Config::from_url(server.url());
  cfg.timeout = 250ms;
  redisync::Client client(cfg);
  client.execute({"PING"});
  const std::string busy = "local x = 0 for i = 1, 1000000 do x = x + i end return 1";
  const std::string padding(20000, 'p');
  constexpr int kCalls = 100;
  std::mutex m;
  std::condition_variable cv;
  int answered = 0;
  std::vector<std::string> errors;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kCalls; ++i) {
    client.async_execute({"EVAL", busy, "0", padding}, [&](std::exception_ptr error,
                                                          redisync::Reply) {
      std::lock_guard g(m);
      ++answered;
      if (error) {
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          errors.push_back(e.what());
        }
      }
      cv.notify_all();
    });
  }
  std::unique_lock g(m);
  ASSERT_TRUE(cv.wait_for(g, 120s, [&] { return answered == kCalls; })) << answered;
  const auto took = std::chrono::steady_clock::now() - start;
  // The premise: the pipeline took longer than one timeout (else the test proves nothing).
  ASSERT_GT(took, cfg.timeout) << "the server answered every call within one timeout";
  EXPECT_TRUE(errors.empty()) << errors.size() << " timed out, the first: " << errors.front();
}
