// SPDX-License-Identifier: Apache-2.0
// Bad input, each with the decided behaviour: it works, or it fails with a clear exception from
// include/redisync/errors.h; never a crash or a hang, and nothing acquired leaks on the error
// path. Covers lock names (empty, 1 MB, braces, spaces, binary), durations (zero, negative),
// misuse of unlock(), a key of the wrong Redis type, invalid URLs and Config values, a server
// requiring a password, and a fake server answering garbage.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "redisync/redisync.h"
#include "support/expect_error.h"
#include "support/fixed_reply_server.h"
#include "support/redis_server.h"
#include "support/server_stats.h"
#include "support/test_config.h"
#include "support/test_util.h"

using namespace std::chrono_literals;
using redisync::Duration;
using redisync::test::expect_error;
using redisync::test::fast_config;
using redisync::test::FixedReplyServer;
using redisync::test::no_channels;
using redisync::test::RedisServer;
using redisync::test::unique_name;
using redisync::test::wait_until;

namespace {

// Runs `body` on a new thread and waits for it (the calling thread's holds stay untouched).
void on_other_thread(const std::function<void()>& body) {
  std::thread t(body);
  t.join();
}

// The checks every lock kind must pass, for a handle `lock` of kind L.
template <class L>
void check_unlock_misuse(L lock) {
  // unlock() without a hold: NotOwnerError; release() reports not_held.
  EXPECT_THROW(lock.unlock_checked(), redisync::NotOwnerError);
  EXPECT_EQ(lock.release().outcome, redisync::ReleaseOutcome::not_held);

  // unlock() from another thread than the holder: NotOwnerError, the hold is untouched.
  lock.lock();
  on_other_thread([&] { EXPECT_THROW(lock.unlock_checked(), redisync::NotOwnerError); });
  EXPECT_TRUE(lock.is_held_by_current_thread());

  // Double unlock: the second one raises NotOwnerError and frees nothing of anyone else's.
  lock.unlock();
  EXPECT_THROW(lock.unlock_checked(), redisync::NotOwnerError);
  EXPECT_FALSE(lock.is_locked());
}

template <class L>
void check_durations(L lock) {
  const std::string name = lock.name();
  // A fixed lease must be positive.
  EXPECT_THROW(lock.lock(Duration{0}), redisync::InvalidArgument);
  EXPECT_THROW(lock.lock(Duration{-5}), redisync::InvalidArgument);
  EXPECT_THROW(lock.try_lock_for(Duration{100}, Duration{0}), redisync::InvalidArgument);
  EXPECT_THROW(lock.try_lock_for(Duration{100}, Duration{-1}), redisync::InvalidArgument);
  EXPECT_FALSE(lock.is_locked()) << "a rejected call must not have acquired " << name;
  // A zero or negative *wait* means one attempt without waiting (as std::timed_mutex).
  EXPECT_TRUE(lock.try_lock_for(-1s));
  on_other_thread([&] {
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(lock.try_lock_for(-1s));
    EXPECT_FALSE(lock.try_lock_for(0ms));
    EXPECT_FALSE(lock.try_lock_for(Duration{-100}, Duration{1000}));
    EXPECT_LT(std::chrono::steady_clock::now() - start, 30s);  // a hang guard, not a timing
  });
  lock.unlock();
}

}  // namespace

// --- names ---

TEST(BadInput, EmptyNamesAreInvalidArguments) {
  RedisServer server;
  redisync::Client client(fast_config(server.url()));
  EXPECT_THROW(client.lock(""), redisync::InvalidArgument);
  EXPECT_THROW(client.fair_lock(""), redisync::InvalidArgument);
  EXPECT_THROW(client.fenced_lock(""), redisync::InvalidArgument);
  EXPECT_THROW(client.read_write_lock(""), redisync::InvalidArgument);
  EXPECT_THROW(client.spin_lock(""), redisync::InvalidArgument);
  EXPECT_THROW(client.semaphore(""), redisync::InvalidArgument);
  EXPECT_THROW(client.permit_expirable_semaphore(""), redisync::InvalidArgument);
  EXPECT_THROW(client.count_down_latch(""), redisync::InvalidArgument);
}

TEST(BadInput, OneMegabyteNamesWork) {
  // Redis keys and channels may be up to 512 MB: a 1 MB name is legal and must work.
  RedisServer server;
  // Each call carries the name three or four times (lock, channel, guard keys): megabytes that
  // an instrumented, loaded client copied and wrote past fast_config's 500 ms timeout (a TSan
  // CI run). The test is about big names working, not about their speed.
  auto cfg = fast_config(server.url());
  cfg.timeout = 10s;
  redisync::Client client(cfg);
  const std::string name = unique_name("big:") + std::string(1 << 20, 'x');
  auto lock = client.lock(name);
  lock.lock();
  EXPECT_EQ(server.command({"EXISTS", name}).integer, 1);
  lock.unlock();
  auto fenced = client.fenced_lock(name + "f");
  EXPECT_EQ(fenced.lock_and_get_token(), 1u);
  fenced.unlock();
  auto fair = client.fair_lock(name + "q");
  ASSERT_TRUE(fair.try_lock_for(1s));
  fair.unlock();
  EXPECT_FALSE(lock.is_locked());
}

TEST(BadInput, BracesSpacesAndBinaryBytesInNamesWork) {
  // Every byte string is a valid Redis key. Names with '{' keep Redisson's TAG rule (spec
  // §1.1): derived keys use the name unchanged instead of wrapping it in braces.
  RedisServer server;
  redisync::Client client(fast_config(server.url()));
  const std::vector<std::string> names = {
      "{", "}", "{}", "a{b}c", "}{", "{{x}}", " ", "with space", "tab\there", "new\nline",
      std::string("nul\0byte", 8), std::string("\x00", 1), "\xff\xfe\x80", "\r\n*1\r\n$4\r\nPING"};
  for (const auto& name : names) {
    SCOPED_TRACE(testing::PrintToString(name));
    auto lock = client.lock(name);
    lock.lock();
    EXPECT_EQ(server.command({"EXISTS", name}).integer, 1);
    // A second owner waits on the lock's channel and gets it after the release.
    std::atomic<bool> got{false};
    std::thread waiter([&] {
      if (lock.try_lock_for(10s)) {
        got = true;
        lock.unlock();
      }
    });
    std::this_thread::sleep_for(20ms);
    lock.unlock();
    waiter.join();
    EXPECT_TRUE(got);
    auto fenced = client.fenced_lock(name);  // same name, another kind: its own token key
    const auto token = fenced.try_lock_and_get_token_for(Duration{1000});
    ASSERT_TRUE(token.has_value());
    fenced.unlock();
  }
  EXPECT_TRUE(wait_until([&] { return no_channels(server); }, 5s));
}

// --- durations ---

TEST(BadInput, ZeroAndNegativeDurations) {
  RedisServer server;
  redisync::Client client(fast_config(server.url()));
  check_durations(client.lock(unique_name("dur:")));
  check_durations(client.fair_lock(unique_name("dur:")));
  check_durations(client.fenced_lock(unique_name("dur:")));
  auto fenced = client.fenced_lock(unique_name("dur:"));
  EXPECT_THROW(fenced.lock_and_get_token(Duration{0}), redisync::InvalidArgument);
  EXPECT_THROW(fenced.try_lock_and_get_token_for(Duration{10}, Duration{-1}),
               redisync::InvalidArgument);

  auto sem = client.semaphore(unique_name("sem:"));
  ASSERT_TRUE(sem.try_set_permits(1));
  EXPECT_THROW(sem.acquire(-1), redisync::InvalidArgument);
  EXPECT_THROW(sem.release(-1), redisync::InvalidArgument);
  EXPECT_TRUE(sem.try_acquire_for(1, -1s));  // one attempt
  EXPECT_FALSE(sem.try_acquire_for(1, 0ms));
  sem.release(1);

  auto latch = client.count_down_latch(unique_name("latch:"));
  EXPECT_TRUE(latch.wait_for(Duration{-1}));  // never set: count 0, already open
}

// --- unlock misuse ---

TEST(BadInput, UnlockWithoutHoldFromAnotherThreadAndTwice) {
  RedisServer server;
  redisync::Client client(fast_config(server.url()));
  check_unlock_misuse(client.lock(unique_name("misuse:")));
  check_unlock_misuse(client.fair_lock(unique_name("misuse:")));
  check_unlock_misuse(client.fenced_lock(unique_name("misuse:")));
  check_unlock_misuse(client.spin_lock(unique_name("misuse:")));
}

// --- a key of the wrong type under the lock's name ---

TEST(BadInput, WrongTypeKeyIsAServerErrorNamingTheLock) {
  RedisServer server;
  redisync::Client client(fast_config(server.url()));
  struct Case {
    std::string name;
    std::function<void(const std::string&)> use;
  };
  const std::vector<Case> cases = {
      {"wt:lock", [&](const std::string& n) { client.lock(n).lock(); }},
      {"wt:lock-try", [&](const std::string& n) { (void)client.lock(n).try_lock_for(1s); }},
      {"wt:fair", [&](const std::string& n) { client.fair_lock(n).lock(); }},
      {"wt:fenced", [&](const std::string& n) { (void)client.fenced_lock(n).lock_and_get_token(); }},
      {"wt:rw", [&](const std::string& n) { client.read_write_lock(n).lock(); }},
      {"wt:spin", [&](const std::string& n) { client.spin_lock(n).lock(); }},
      {"wt:sem", [&](const std::string& n) { (void)client.semaphore(n).try_acquire(); }},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_FALSE(server.command({"RPUSH", c.name, "not-a-lock"}).is_error());
    try {
      c.use(c.name);
      ADD_FAILURE() << "expected ServerError";
    } catch (const redisync::ServerError& e) {
      EXPECT_NE(std::string(e.what()).find(c.name), std::string::npos) << e.what();
      EXPECT_NE(e.reply().find("WRONGTYPE"), std::string::npos) << e.reply();
    }
    // The foreign key is untouched and nothing was left subscribed.
    EXPECT_EQ(server.command({"TYPE", c.name}).as_string(), "list");
  }
  EXPECT_TRUE(wait_until([&] { return no_channels(server); }, 5s));
  // The Client is still usable.
  auto ok = client.lock(unique_name("wt:after:"));
  ok.lock();
  ok.unlock();
}

// --- URLs and Config values ---

TEST(BadInput, InvalidUrlsAreConfigErrors) {
  for (const std::string& url : std::vector<std::string>{"", "redis", "redis://", "http://127.0.0.1:6379", "redis://:6379", "redis://h:0",
        "redis://h:65536", "redis://h:-1", "redis://h:12ab", "redis://h/notadb", "redis://h/-1",
        "redis://h?timeout=", "redis://h?timeout=-1", "redis://h?timeout=5parsecs",
        "redis://h?retry_attempts=x", "redis://h?no_such_option=1", "redis://:%zz@h",
        "redis://[::1", "unix://", "redis-sentinel://h:26379", "redis-sentinel:///master",
        std::string("redis://h\0x:1", 13), "redis://h:99999999999999999999"}) {
    SCOPED_TRACE(testing::PrintToString(url));
    EXPECT_THROW(redisync::Config::from_url(url), redisync::ConfigError);
    EXPECT_THROW(redisync::Client{url}, redisync::ConfigError);
  }
}

TEST(BadInput, InvalidConfigValuesAreConfigErrors) {
  const std::vector<std::function<void(redisync::Config&)>> breakers = {
      [](redisync::Config& c) { c.timeout = Duration{0}; },
      [](redisync::Config& c) { c.timeout = Duration{-1}; },
      [](redisync::Config& c) { c.connect_timeout = Duration{-1}; },
      [](redisync::Config& c) { c.retry_attempts = -1; },
      [](redisync::Config& c) { c.retry_interval = Duration{-1}; },
      [](redisync::Config& c) { c.lock_watchdog_timeout = Duration{0}; },
      [](redisync::Config& c) { c.database = -1; },
      [](redisync::Config& c) { c.port = 0; },
      [](redisync::Config& c) { c.host = ""; },
      [](redisync::Config& c) { c.renewal_batch_size = 0; },
      [](redisync::Config& c) {
        c.topology = redisync::Topology::sentinel;
        c.seeds.clear();
      },
  };
  for (size_t i = 0; i < breakers.size(); ++i) {
    SCOPED_TRACE("breaker " + std::to_string(i));
    redisync::Config cfg;
    breakers[i](cfg);
    EXPECT_THROW(cfg.validate(), redisync::ConfigError);
    EXPECT_THROW(redisync::Client{cfg}, redisync::ConfigError);
  }
}

// A database the server does not have (SELECT: "ERR DB index is out of range") failed every
// connect as a ConnectionError, resent retry_attempts times like an outage: a ConfigError,
// reported at once (no resend or reconnect changes the server's answer), naming the index.
TEST(BadInput, DatabaseTheServerDoesNotHaveIsAConfigError) {
  RedisServer server;
  const std::string url = "redis://127.0.0.1:" + std::to_string(server.port()) + "/99999";
  redisync::Client client(url);  // default resends: 3, 1.5 s apart
  const auto start = std::chrono::steady_clock::now();
  try {
    client.execute({"PING"});
    FAIL() << "expected ConfigError";
  } catch (const redisync::ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("database 99999"), std::string::npos) << what;
    EXPECT_NE(what.find("DB index is out of range"), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_THROW(client.lock(unique_name("db:")).lock(), redisync::ConfigError);
  EXPECT_THROW(client.lock(unique_name("db:")).try_lock(), redisync::ConfigError);
}

// --- authentication ---

TEST(BadInput, WrongPasswordIsAnAuthError) {
  RedisServer server({.password = "s3cret"});
  redisync::Client client(
      fast_config("redis://:wrong@127.0.0.1:" + std::to_string(server.port())));
  EXPECT_THROW(client.lock(unique_name("auth:")).lock(), redisync::AuthError);
}

TEST(BadInput, MissingPasswordIsAnAuthError) {
  // The server answers NOAUTH to every command: that is a credentials problem (AuthError, a
  // ConnectionError), not a ServerError about the lock.
  RedisServer server({.password = "s3cret"});
  redisync::Client client(fast_config("redis://127.0.0.1:" + std::to_string(server.port())));
  auto lock = client.lock(unique_name("auth:"));
  try {
    lock.lock();
    FAIL() << "expected AuthError";
  } catch (const redisync::AuthError& e) {
    // NOAUTH, or the protocol error Redis answers an unauthenticated request of more than 10
    // arguments with (the acquire step with its publish guard arguments: executor.cpp).
    const std::string what = e.what();
    EXPECT_TRUE(what.find("NOAUTH") != std::string::npos ||
                what.find("unauthenticated") != std::string::npos)
        << what;
  }
  EXPECT_THROW(client.execute({"PING"}), redisync::AuthError);
  EXPECT_TRUE(wait_until([&] { return no_channels(server); }, 5s));
}

// --- a server answering garbage ---

namespace {

// A TCP server on 127.0.0.1 that answers every connection with `reply(n)` (n = connection
// number) and then closes it, or keeps it open for `hold`.
class GarbageServer {
 public:
  GarbageServer(std::function<std::string(int)> reply, std::chrono::milliseconds hold)
      : reply_(std::move(reply)), hold_(hold) {
    const auto listener = redisync::test::listen_on_loopback();
    fd_ = listener.fd;
    port_ = listener.port;
    thread_ = std::thread([this] { serve(); });
  }
  ~GarbageServer() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  GarbageServer(const GarbageServer&) = delete;
  GarbageServer& operator=(const GarbageServer&) = delete;

  std::string url() const { return "redis://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_; }

 private:
  void serve() {
    while (!stop_) {
      pollfd pfd{fd_, POLLIN, 0};
      if (::poll(&pfd, 1, 20) <= 0) continue;
      const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) continue;
      const std::string bytes = reply_(connections_++);
      (void)!::send(conn, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      const auto until = std::chrono::steady_clock::now() + hold_;
      while (!stop_ && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(5ms);
      }
      ::close(conn);
    }
  }

  std::function<std::string(int)> reply_;
  std::chrono::milliseconds hold_;
  int fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

// Random bytes whose first byte is not a RESP type byte (so they can never be a valid reply).
std::string random_garbage(std::mt19937& rng, size_t size) {
  std::string out(size, '\0');
  for (auto& c : out) c = static_cast<char>(rng());
  out[0] = static_cast<char>('A' + rng() % 20);  // 'A'..'T': no RESP2/RESP3 type byte
  return out;
}

// Runs `call`; it must fail with one of the clean errors (or, for `timeout_ok`, TimeoutError).
void expect_clean_failure(const std::function<void()>& call, bool timeout_ok,
                          std::map<std::string, int>& seen) {
  try {
    call();
    ADD_FAILURE() << "garbage was accepted as a reply";
  } catch (const redisync::ProtocolError&) {
    ++seen["ProtocolError"];
  } catch (const redisync::ConnectionError&) {
    ++seen["ConnectionError"];
  } catch (const redisync::TimeoutError& e) {
    if (!timeout_ok) ADD_FAILURE() << "TimeoutError although the server closed: " << e.what();
    ++seen["TimeoutError"];
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception: " << e.what();
  }
}

}  // namespace

TEST(BadInput, GarbageServerGivesProtocolOrConnectionErrorNeverACrash) {
  std::mt19937 rng(12345);
  std::map<std::string, int> seen;
  // Random bytes, then the connection closes.
  {
    GarbageServer server([&](int) { return random_garbage(rng, 1 + rng() % 512); }, 0ms);
    redisync::Client client(fast_config(server.url()));
    for (int i = 0; i < 20; ++i) {
      expect_clean_failure([&] { client.execute({"PING"}); }, false, seen);
    }
    auto lock = client.lock(unique_name("garbage:"));
    for (int i = 0; i < 5; ++i) {
      expect_clean_failure([&] { (void)lock.try_lock_for(500ms); }, false, seen);
      expect_clean_failure([&] { lock.unlock_checked(); }, false, seen);
    }
  }
  // Random bytes on a connection that stays open: the reader rejects the first byte at once.
  {
    GarbageServer server([&](int) { return random_garbage(rng, 64); }, 300ms);
    redisync::Client client(fast_config(server.url()));
    for (int i = 0; i < 5; ++i) {
      expect_clean_failure([&] { client.execute({"PING"}); }, true, seen);
    }
  }
  // Well-formed prefixes followed by garbage, truncated replies, an HTTP answer, a valid
  // reply with garbage after it.
  const std::vector<std::string> shapes = {
      "*2\r\n:1\r\n\x01\x02\x03", "$5\r\nab", "$-7\r\n", "*-9\r\n", ":notanumber\r\n",
      "$99999999999999999999\r\n", "*99999999999\r\n", "HTTP/1.1 400 Bad Request\r\n\r\n",
      "+PONG\r\n\xff\xfe garbage", std::string("\0\0\0\0", 4)};
  {
    GarbageServer server([&](int n) { return shapes[static_cast<size_t>(n) % shapes.size()]; },
                         0ms);
    redisync::Client client(fast_config(server.url()));
    for (size_t i = 0; i < shapes.size() * 2; ++i) {
      try {
        client.execute({"PING"});  // "+PONG" then garbage may legitimately answer one PING
      } catch (const redisync::ProtocolError&) {
        ++seen["ProtocolError"];
      } catch (const redisync::ConnectionError&) {
        ++seen["ConnectionError"];
      } catch (const redisync::ServerError&) {
        ++seen["ServerError"];
      } catch (const std::exception& e) {
        ADD_FAILURE() << "unexpected exception: " << e.what();
      }
    }
  }
  std::string summary;
  for (const auto& [what, n] : seen) summary += " " + what + "=" + std::to_string(n);
  std::cout << "garbage server: failures seen:" << summary << "\n";
  EXPECT_GT(seen["ProtocolError"], 0);
}

// --- issue 17 item 8: malformed Sentinel replies, passwords in URL errors ---

// A sentinel answering GET-MASTER-ADDR-BY-NAME with a port that is no number once reached
// std::stoi on the I/O thread and ended the process; now it is a clean ConnectionError.
TEST(BadInput, MalformedSentinelReplyIsAnErrorNotACrash) {
  const std::vector<std::string> answers = {
      "*2\r\n$9\r\n127.0.0.1\r\n$4\r\nnope\r\n",
      "*2\r\n$9\r\n127.0.0.1\r\n$20\r\n99999999999999999999\r\n",
      "*2\r\n$9\r\n127.0.0.1\r\n$5\r\n70000\r\n",
      "*2\r\n$9\r\n127.0.0.1\r\n$0\r\n\r\n",
      "*2\r\n$0\r\n\r\n:6379\r\n",
      "*1\r\n$9\r\n127.0.0.1\r\n",
      "*2\r\n*0\r\n*0\r\n",
  };
  for (const auto& answer : answers) {
    SCOPED_TRACE(testing::PrintToString(answer));
    GarbageServer sentinel([&](int) { return answer; }, 0ms);
    auto cfg = redisync::Config::from_url("redis-sentinel://127.0.0.1:" +
                                          sentinel.url().substr(sentinel.url().rfind(':') + 1) +
                                          "/mymaster");
    cfg.timeout = 500ms;
    cfg.connect_timeout = 500ms;
    cfg.retry_attempts = 0;
    cfg.reconnection_delay_min = 20ms;
    cfg.reconnection_delay_max = 50ms;
    try {
      redisync::Client client(cfg);
      client.execute({"PING"});
      ADD_FAILURE() << "a malformed sentinel reply was accepted";
    } catch (const redisync::Error&) {
      // ConnectionError / TimeoutError naming the sentinel: fine
    }
  }
}

// A password with an unescaped '/', '?', '@', '&', '=' or a broken '%' escape must never show
// up, even in part, in the error of a URL it made unparsable: in the userinfo, or as the value
// of the password / sentinel_password option, where an unescaped '&' makes the rest of the
// password look like further options.
TEST(BadInput, UrlErrorsNeverEchoAnyPartOfAPassword) {
  const std::string secret = "s3cr3tPW";
  for (const std::string& password :
       {secret + "/x", secret + "?x", secret + "/x?y@z", "a/" + secret, "x?" + secret + "@y",
        secret + "@/", "/" + secret, "?" + secret + "/", secret + "%", secret + "%zz",
        "%zz" + secret, secret + "%4", "%" + secret}) {
    for (const std::string& url :
         {"redis://user:" + password + "@127.0.0.1:6379", "redis://:" + password + "@h:1/2",
          "rediss://:" + password + "@h", "redis-sentinel://:" + password + "@h:26379/m",
          "redis-cluster://u:" + password + "@h:7000,h:7001"}) {
      try {
        const auto cfg = redisync::Config::from_url(url);
        // Parsed: then the password must be exactly what was written.
        EXPECT_EQ(cfg.password, password) << url;
      } catch (const redisync::ConfigError& e) {
        const std::string what = e.what();
        for (std::size_t len = 4; len <= secret.size(); ++len) {
          for (std::size_t at = 0; at + len <= secret.size(); ++at) {
            EXPECT_EQ(what.find(secret.substr(at, len)), std::string::npos)
                << "error echoes '" << secret.substr(at, len) << "': " << what;
          }
        }
      }
    }
  }
  for (const std::string& password :
       {"ab&" + secret, "ab&" + secret + "=1", secret + "&x", "ab&cd=" + secret,
        "ab&timeout=" + secret, "ab&db=" + secret, "ab&verify_peer=" + secret,
        "ab&client_name=" + secret + "%20x", "ab&" + secret + "%zz", "ab&%zz" + secret + "=1",
        secret + "%", secret + "%zz", "ab&" + secret + "&", "ab&&" + secret}) {
    for (const std::string& url :
         {"redis://h?password=" + password, "redis://h?db=1&password=" + password,
          "redis://u:p@h?password=" + password + "&timeout=5s",
          "redis-sentinel://h:26379/m?sentinel_password=" + password,
          "redis-sentinel://h:26379/m?sentinel_password=" + password + "&password=pw",
          "unix:///tmp/r.sock?password=" + password}) {
      try {
        const auto cfg = redisync::Config::from_url(url);
        // Parsed: then no part of the secret ended up in a setting other than a password.
        const std::string where = cfg.client_name + cfg.username + cfg.sentinel_username +
                                  cfg.tls_options.ca_file + cfg.tls_options.cert_file;
        EXPECT_EQ(where.find(secret), std::string::npos) << url;
      } catch (const redisync::ConfigError& e) {
        const std::string what = e.what();
        for (std::size_t len = 4; len <= secret.size(); ++len) {
          for (std::size_t at = 0; at + len <= secret.size(); ++at) {
            EXPECT_EQ(what.find(secret.substr(at, len)), std::string::npos)
                << "error echoes '" << secret.substr(at, len) << "': " << what;
          }
        }
      }
    }
  }
}

// A server (or proxy) that answers an acquire script with a reply of a shape the script never
// gives: a ServerError naming the lock and the server. The fenced lock took an array of two
// strings as "not acquired, retry at once" and spun out its whole wait, and the other kinds'
// error named neither the lock nor the server ("redisync: unexpected reply OK").
TEST(BadInput, AnAcquireReplyOfTheWrongShapeIsAServerErrorNamingTheLock) {
  struct Case {
    std::string reply;
    std::function<void(redisync::Client&, const std::string&)> acquire;
    std::string noun;
  };
  const std::vector<Case> cases = {
      {"+OK\r\n",
       [](redisync::Client& c, const std::string& n) { (void)c.lock(n).try_lock_for(2s); },
       "lock '"},
      {"*2\r\n$1\r\na\r\n$1\r\nb\r\n",
       [](redisync::Client& c, const std::string& n) {
         (void)c.fenced_lock(n).try_lock_and_get_token_for(2s);
       },
       "fenced lock '"},
      {"*0\r\n",
       [](redisync::Client& c, const std::string& n) { (void)c.fair_lock(n).try_lock_for(2s); },
       "fair lock '"},
  };
  for (const auto& c : cases) {
    FixedReplyServer server(c.reply);
    redisync::Client client(fast_config(server.url()));
    const auto name = unique_name("shape:");
    expect_error<redisync::ServerError>([&] { c.acquire(client, name); },
                                        {c.noun + name + "'", "127.0.0.1", "unexpected reply"});
  }
}
