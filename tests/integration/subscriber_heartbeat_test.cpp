// SPDX-License-Identifier: Apache-2.0
// The pub/sub heartbeat (net::Subscriber::set_heartbeat): each message is dated by the send
// time of the latest PING answered before it on the same connection, a time before the
// message was published. Grant mode counts a grant's lease from it (sync/acquire/grant.h).
// A user who may not PING gets undated messages and working subscriptions.
#include <gtest/gtest.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "net/executor.h"
#include "net/subscriber.h"
#include "redisync/redisync.h"
#include "support/fault_proxy.h"
#include "support/redis_server.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::net::Clock;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

struct Delivery {
  std::string payload;
  redisync::net::PublishedAfter published_after;
};

// A Subscriber of its own on `url` with a 20 ms heartbeat, its I/O thread, and the messages
// of one channel as they came.
class HeartbeatSubscriber {
 public:
  explicit HeartbeatSubscriber(const std::string& url)
      : work_(asio::make_work_guard(io_)), thread_([this] { io_.run(); }) {
    const auto config = redisync::Config::from_url(url);
    on_io([&] {
      subscriber_ = std::make_unique<redisync::net::Subscriber>(
          io_,
          redisync::net::Connection::create(io_, redisync::net::connection_options(config, true),
                                            nullptr),
          1000ms, 5000ms);
      subscriber_->set_heartbeat(20ms);
    });
  }
  ~HeartbeatSubscriber() {
    on_io([&] {
      channel_.reset();
      others_.clear();
      subscriber_->close();
      subscriber_.reset();
    });
    work_.reset();
    io_.stop();
    thread_.join();
  }

  // Joins `name`; true once the server confirmed the subscription.
  bool join(const std::string& name) {
    std::promise<bool> confirmed;
    on_io([&] {
      channel_ = subscriber_->join(name, [this](redisync::net::Channel&, const std::string& payload,
                                                redisync::net::PublishedAfter published_after) {
        std::lock_guard g(m_);
        deliveries_.push_back({payload, published_after});
      });
      channel_->when_subscribed(
          [&confirmed](std::exception_ptr error) { confirmed.set_value(!error); }, 5000ms);
    });
    return confirmed.get_future().get();
  }

  // Joins each of `names`, `spacing` apart, without waiting for confirmations; then answers
  // how many the server confirmed (each within 5 s).
  int join_each(const std::vector<std::string>& names, std::chrono::milliseconds spacing) {
    std::vector<std::future<bool>> confirmations;
    for (const auto& name : names) {
      auto confirmed = std::make_shared<std::promise<bool>>();
      confirmations.push_back(confirmed->get_future());
      on_io([&] {
        others_.push_back(subscriber_->join(name, nullptr));
        others_.back()->when_subscribed(
            [confirmed](std::exception_ptr error) { confirmed->set_value(!error); }, 5000ms);
      });
      std::this_thread::sleep_for(spacing);
    }
    int count = 0;
    for (auto& c : confirmations) count += c.get() ? 1 : 0;
    return count;
  }

  // The delivery of `payload`, once it came (at most 5 s).
  std::optional<Delivery> delivery_of(const std::string& payload) {
    std::optional<Delivery> found;
    wait_until(
        [&] {
          std::lock_guard g(m_);
          for (const auto& d : deliveries_) {
            if (d.payload == payload) found = d;
          }
          return found.has_value();
        },
        5s);
    return found;
  }

 private:
  template <class F>
  void on_io(F f) {
    std::promise<void> done;
    asio::post(io_, [&] {
      f();
      done.set_value();
    });
    done.get_future().get();
  }

  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::thread thread_;
  std::unique_ptr<redisync::net::Subscriber> subscriber_;
  std::shared_ptr<redisync::net::Channel> channel_;
  std::vector<std::shared_ptr<redisync::net::Channel>> others_;
  std::mutex m_;
  std::vector<Delivery> deliveries_;
};

}  // namespace

// The subscriber hears the server 300 ms late (the proxy delays what the server sends), so
// the PING it sent last is always younger than the message it reads: dating a message by the
// latest PING sent, or by when a message or a pong was read, would date it after it was
// published. Only "sent before a PING answered ahead of it" is never later than the publish.
TEST(SubscriberHeartbeat, AMessageIsDatedNoLaterThanItsPublication) {
  RedisServer server;
  redisync::test::FaultProxy proxy(server.port());
  proxy.set_delay(redisync::test::Direction::to_client, 300ms);
  HeartbeatSubscriber subscriber(proxy.url());
  const std::string channel = unique_name("heartbeat:");
  ASSERT_TRUE(subscriber.join(channel));
  std::this_thread::sleep_for(500ms);  // pongs are coming back
  for (int i = 0; i < 5; ++i) {
    const std::string payload = "m" + std::to_string(i);
    const auto sent = Clock::now();
    EXPECT_EQ(server.command({"PUBLISH", channel, payload}).as_integer(), 1);
    const auto published_by = Clock::now();  // the server answered: it has published
    const auto delivery = subscriber.delivery_of(payload);
    ASSERT_TRUE(delivery.has_value()) << payload << " never came";
    ASSERT_TRUE(delivery->published_after.has_value()) << payload << " came undated";
    EXPECT_LE(*delivery->published_after, published_by)
        << payload << ": dated "
        << std::chrono::duration_cast<std::chrono::milliseconds>(*delivery->published_after -
                                                                 published_by)
               .count()
        << " ms after it was published";
    // Not a timing bound: a PING answered before the message was sent before the publish,
    // at most the heartbeat's lag behind it (20 ms here, 300 ms under the proxy's delay
    // only for the replies, so a second is far).
    EXPECT_GT(*delivery->published_after, sent - 1s) << payload;
    std::this_thread::sleep_for(50ms);
  }
}

// A user who may not PING: the heartbeat stops at its first refusal, and the refusal is not
// taken for a refused subscription (replies name no command: a NOPERM fails the subscriptions
// not yet confirmed). The server's replies come 100 ms late, so subscriptions are pending when
// the refusal comes. Messages come undated.
TEST(SubscriberHeartbeat, AUserWhoMayNotPingGetsWorkingSubscriptionsAndUndatedMessages) {
  RedisServer server;
  redisync::test::FaultProxy proxy(server.port());
  proxy.set_delay(redisync::test::Direction::to_client, 100ms);
  HeartbeatSubscriber subscriber(
      server.add_user("noping", {"~*", "&*", "+@all", "-ping"}, proxy.port()));
  const std::string first = unique_name("heartbeat:");
  ASSERT_TRUE(subscriber.join(first));
  std::vector<std::string> names;
  for (int i = 0; i < 20; ++i) names.push_back(unique_name("heartbeat:"));
  EXPECT_EQ(subscriber.join_each(names, 10ms), 20) << "a refused PING failed a subscription";
  EXPECT_EQ(server.command({"PUBLISH", first, "m"}).as_integer(), 1);
  const auto delivery = subscriber.delivery_of("m");
  ASSERT_TRUE(delivery.has_value());
  EXPECT_FALSE(delivery->published_after.has_value());
}
