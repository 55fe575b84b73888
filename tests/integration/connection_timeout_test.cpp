// SPDX-License-Identifier: Apache-2.0
// Requests that time out together on one connection (net::Connection::on_timeout_timer), when
// their handlers send on the same connection: the walk over the pending requests once ran the
// handlers in place, and a handler's send grew the queue under the walk (a deque's push_back
// invalidates its iterators). A MultiLock whose members timed out behind a silent server
// crashed the lease property run that way (issue 36).
#include <gtest/gtest.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <string>
#include <thread>

#include "net/connection.h"
#include "net/executor.h"
#include "redisync/redisync.h"
#include "support/expect_error.h"
#include "support/fault_proxy.h"
#include "support/redis_server.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::net::Connection;
using redisync::test::Direction;
using redisync::test::FaultProxy;
using redisync::test::is_error;
using redisync::test::RedisServer;
using redisync::test::wait_until;

namespace {

// How a timed-out request ended: counted once each, by kind.
struct Outcomes {
  std::atomic<int> timed_out{0};
  std::atomic<int> other{0};
  void count(std::exception_ptr e) { (is_error<redisync::TimeoutError>(e) ? timed_out : other)++; }
};

}  // namespace

TEST(ConnectionTimeout, HandlersThatSendOnTheConnectionWhileOthersTimeOutAreEachToldOnce) {
  RedisServer server;
  FaultProxy proxy(server.port());
  auto config = redisync::Config::from_url(proxy.url());
  config.timeout = 300ms;
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  std::thread loop([&] { io.run(); });
  std::shared_ptr<Connection> connection;
  std::promise<bool> ready;
  asio::post(io, [&] {
    connection = Connection::create(io, redisync::net::connection_options(config, false), nullptr);
    connection->execute({"PING"},
                        [&](std::exception_ptr e, redisync::net::Reply) { ready.set_value(!e); });
  });
  ASSERT_TRUE(ready.get_future().get()) << "no connection through the proxy";

  // The server goes silent: every request below times out, in one walk of the timer. Each
  // handler of the first wave sends a second request on the same connection (hundreds of
  // sends while the walk is under way, enough to make the deque reallocate its block map).
  proxy.set_blackhole(Direction::to_client, true);
  constexpr int kFirstWave = 400;
  Outcomes first, second;
  asio::post(io, [&] {
    for (int i = 0; i < kFirstWave; ++i) {
      connection->execute(
          {"PING", std::to_string(i)}, [&](std::exception_ptr e, redisync::net::Reply) {
            first.count(e);
            connection->execute({"PING", "again"}, [&](std::exception_ptr e2,
                                                       redisync::net::Reply) { second.count(e2); });
          });
    }
  });
  // Bounded: each wave ends within its timeout plus the timer's next turn.
  EXPECT_TRUE(wait_until([&] { return first.timed_out + first.other >= kFirstWave; }, 10s, 10ms));
  EXPECT_TRUE(wait_until([&] { return second.timed_out + second.other >= kFirstWave; }, 10s, 10ms));
  std::this_thread::sleep_for(400ms);  // a handler told twice would show now
  EXPECT_EQ(first.timed_out.load(), kFirstWave);
  EXPECT_EQ(first.other.load(), 0);
  // The second wave ends in a timeout too, or, once the connection gives up on the silent
  // server, in its connection error: each request once.
  EXPECT_EQ(second.timed_out + second.other, kFirstWave);

  std::promise<void> closed;
  asio::post(io, [&] {
    connection->close();
    connection.reset();
    closed.set_value();
  });
  closed.get_future().get();
  work.reset();
  io.stop();
  loop.join();
}
