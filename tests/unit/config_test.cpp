// SPDX-License-Identifier: Apache-2.0
#include "redisync/config.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "redisync/errors.h"

namespace redisync {
namespace {

using namespace std::chrono_literals;

// Success when `f` throws a redisync::ConfigError whose message contains `needle`.
::testing::AssertionResult throws_config_error(const std::function<void()>& f,
                                               std::string_view needle) {
  try {
    f();
  } catch (const ConfigError& e) {
    if (e.code() != errc::invalid_config) {
      return ::testing::AssertionFailure() << "wrong code " << e.code() << ": " << e.what();
    }
    if (std::string_view(e.what()).find(needle) == std::string_view::npos) {
      return ::testing::AssertionFailure()
             << "message \"" << e.what() << "\" lacks \"" << needle << "\"";
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "threw something else: " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

::testing::AssertionResult url_fails(const std::string& url, std::string_view needle) {
  return throws_config_error([&] { (void)Config::from_url(url); }, needle);
}

// The message of the ConfigError from_url throws, or "" when it does not throw one.
std::string url_error(const std::string& url) {
  try {
    (void)Config::from_url(url);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

::testing::AssertionResult validate_fails(const Config& config, std::string_view needle) {
  return throws_config_error([&] { config.validate(); }, needle);
}

// ---------------------------------------------------------------------------------------------
// from_url: redis:// and rediss://

TEST(ConfigFromUrl, HostOnlyKeepsDefaults) {
  const Config c = Config::from_url("redis://localhost");
  const Config defaults;
  EXPECT_EQ(c.topology, Topology::single);
  EXPECT_EQ(c.host, "localhost");
  EXPECT_EQ(c.port, 6379);
  EXPECT_EQ(c.database, 0);
  EXPECT_FALSE(c.tls);
  EXPECT_TRUE(c.username.empty());
  EXPECT_TRUE(c.password.empty());
  EXPECT_TRUE(c.unix_socket.empty());
  EXPECT_TRUE(c.seeds.empty());
  EXPECT_EQ(c.timeout, defaults.timeout);
  EXPECT_EQ(c.connect_timeout, defaults.connect_timeout);
  EXPECT_EQ(c.retry_attempts, defaults.retry_attempts);
  EXPECT_EQ(c.lock_watchdog_timeout, defaults.lock_watchdog_timeout);
  EXPECT_TRUE(c.tls_options.verify_peer);
}

TEST(ConfigFromUrl, HostPortDatabase) {
  const Config c = Config::from_url("redis://redis.example.com:6380/2");
  EXPECT_EQ(c.host, "redis.example.com");
  EXPECT_EQ(c.port, 6380);
  EXPECT_EQ(c.database, 2);
  EXPECT_EQ(Config::from_url("redis://10.0.0.7:65535/").port, 65535);
  EXPECT_EQ(Config::from_url("redis://10.0.0.7/").database, 0);
  EXPECT_EQ(Config::from_url("redis://my_redis-1.svc").host, "my_redis-1.svc");
}

TEST(ConfigFromUrl, RedissEnablesTls) {
  const Config c = Config::from_url("rediss://secure.example.com:6380");
  EXPECT_TRUE(c.tls);
  EXPECT_EQ(c.host, "secure.example.com");
  EXPECT_EQ(c.port, 6380);
  EXPECT_FALSE(Config::from_url("redis://h").tls);
}

TEST(ConfigFromUrl, SchemeIsCaseInsensitive) {
  EXPECT_EQ(Config::from_url("REDIS://h:1").port, 1);
  EXPECT_TRUE(Config::from_url("Rediss://h").tls);
}

TEST(ConfigFromUrl, Ipv6Literal) {
  Config c = Config::from_url("redis://[::1]:6380/1");
  EXPECT_EQ(c.host, "::1");
  EXPECT_EQ(c.port, 6380);
  EXPECT_EQ(c.database, 1);
  c = Config::from_url("redis://[2001:db8::10]");
  EXPECT_EQ(c.host, "2001:db8::10");
  EXPECT_EQ(c.port, 6379);
  c = Config::from_url("rediss://u:p@[::ffff:127.0.0.1]:7000");
  EXPECT_EQ(c.host, "::ffff:127.0.0.1");
  EXPECT_EQ(c.password, "p");
  // RFC 6874 zone id: "%25" is an escaped '%'.
  EXPECT_EQ(Config::from_url("redis://[fe80::1%25eth0]:6379").host, "fe80::1%eth0");
}

TEST(ConfigFromUrl, BadIpv6Literal) {
  EXPECT_TRUE(url_fails("redis://::1:6379", "brackets"));
  EXPECT_TRUE(url_fails("redis://[::1:6379", "host"));
  EXPECT_TRUE(url_fails("redis://[::1]6379", "host"));
  EXPECT_TRUE(url_fails("redis://[]:6379", "host"));
  EXPECT_TRUE(url_fails("redis://[localhost]", "IPv6"));
  EXPECT_TRUE(url_fails("redis://[fe80::1%25]", "IPv6"));
  EXPECT_TRUE(url_fails("redis://[::1]:", "port"));
  EXPECT_TRUE(url_fails("redis://[::1]:0", "port"));
}

TEST(ConfigFromUrl, UserAndPassword) {
  Config c = Config::from_url("redis://alice:s3cret@h");
  EXPECT_EQ(c.username, "alice");
  EXPECT_EQ(c.password, "s3cret");
  EXPECT_EQ(c.host, "h");

  c = Config::from_url("redis://:s3cret@h:6380");
  EXPECT_EQ(c.username, "");
  EXPECT_EQ(c.password, "s3cret");
  EXPECT_EQ(c.port, 6380);

  // No colon: the userinfo is the password alone.
  c = Config::from_url("redis://s3cret@h");
  EXPECT_EQ(c.username, "");
  EXPECT_EQ(c.password, "s3cret");

  // The first ':' separates user from password; the last '@' ends the userinfo.
  c = Config::from_url("redis://bob:a:b@c@h");
  EXPECT_EQ(c.username, "bob");
  EXPECT_EQ(c.password, "a:b@c");
  EXPECT_EQ(c.host, "h");

  c = Config::from_url("redis://@h");
  EXPECT_EQ(c.username, "");
  EXPECT_EQ(c.password, "");
}

TEST(ConfigFromUrl, UserAndPasswordArePercentDecoded) {
  const Config c = Config::from_url("redis://al%69ce%40corp:p%40ss%3Aw%2Fd%25+x@h");
  EXPECT_EQ(c.username, "alice@corp");
  EXPECT_EQ(c.password, "p@ss:w/d%+x");  // '+' stays '+': this is not form encoding
}

TEST(ConfigFromUrl, BadPercentEscape) {
  EXPECT_TRUE(url_fails("redis://:ab%4@h", "password"));
  EXPECT_TRUE(url_fails("redis://:ab%zz@h", "password"));
  EXPECT_TRUE(url_fails("redis://:ab%@h", "password"));
  EXPECT_TRUE(url_fails("redis://u%g1:pw@h", "user"));
}

TEST(ConfigFromUrl, ErrorsNeverShowThePassword) {
  for (const char* url : {"redis://:hunter2@h:bad", "redis://u:hunter2%zz@h", "redis://hunter2@",
                          "redis://:hunter2@h/x", "redis://:hunter2@h?nope=1"}) {
    const std::string message = url_error(url);
    EXPECT_FALSE(message.empty()) << url;
    EXPECT_EQ(message.find("hunter2"), std::string::npos) << message;
  }
}

// An unescaped '&' in the value of a password option makes the rest of the password look like
// further options: their errors name the option by position and never show its text.
TEST(ConfigFromUrl, QueryErrorsAfterAPasswordOptionNeverShowTheirText) {
  for (const char* url :
       {"redis://h?password=ab&hunter2", "redis://h?password=ab&hunter2=x",
        "redis://h?password=ab&timeout=hunter2", "redis://h?db=1&password=ab&hunter2&timeout=1s",
        "redis://h?password=ab&hunter2%zz=1", "redis://h?password=ab&client_name=hunter2%20",
        "redis-sentinel://h/m?sentinel_password=ab&hunter2",
        "redis-sentinel://h/m?sentinel_password=ab&db=hunter2"}) {
    const std::string message = url_error(url);
    EXPECT_FALSE(message.empty()) << url;
    EXPECT_EQ(message.find("hunter"), std::string::npos) << message;
    EXPECT_NE(message.find("%26"), std::string::npos) << message;  // the escape to use
  }
  // Before the password option, or without one, the option is named as usual.
  EXPECT_TRUE(url_fails("redis://h?nope=1&password=ab", "'nope'"));
  EXPECT_TRUE(url_fails("redis://h?user=ab&nope", "'nope'"));
  // Options after it still work.
  EXPECT_EQ(Config::from_url("redis://h?password=ab&timeout=5s").timeout, 5s);
  EXPECT_EQ(Config::from_url("redis://h?password=a=b").password, "a=b");
}

TEST(ConfigFromUrl, BadPort) {
  for (const char* url :
       {"redis://h:0", "redis://h:65536", "redis://h:abc", "redis://h:", "redis://h:6379x",
        "redis://h:-1", "redis://h:+1", "redis://h: 1", "redis://h:99999999999999999999"}) {
    EXPECT_TRUE(url_fails(url, "port")) << url;
  }
}

TEST(ConfigFromUrl, EmptyOrBadHost) {
  EXPECT_TRUE(url_fails("redis://", "host"));
  EXPECT_TRUE(url_fails("redis://:6379", "host"));
  EXPECT_TRUE(url_fails("redis://:pw@", "host"));
  EXPECT_TRUE(url_fails("redis:///2", "host"));
  EXPECT_TRUE(url_fails("redis://h1,h2", "host"));
  EXPECT_TRUE(url_fails("redis://bad host", "host"));
}

TEST(ConfigFromUrl, BadDatabase) {
  for (const char* url : {"redis://h/abc", "redis://h/-1", "redis://h/1x", "redis://h/1/2",
                          "redis://h/+1", "redis://h/99999999999"}) {
    EXPECT_TRUE(url_fails(url, "database")) << url;
  }
}

TEST(ConfigFromUrl, BadSchemeOrShape) {
  EXPECT_TRUE(url_fails("", "url"));
  EXPECT_TRUE(url_fails("localhost:6379", "url"));
  EXPECT_TRUE(url_fails("redis:/h", "url"));
  EXPECT_TRUE(url_fails("://h", "url"));
  EXPECT_TRUE(url_fails("http://h", "'http'"));
  EXPECT_TRUE(url_fails("redis+sentinel://h/m", "'redis+sentinel'"));
  EXPECT_TRUE(url_fails("redis://h#frag", "'#'"));
  EXPECT_TRUE(url_fails("redis://:pa#ss@h", "%23"));
}

// ---------------------------------------------------------------------------------------------
// from_url: unix://

TEST(ConfigFromUrl, UnixSocket) {
  Config c = Config::from_url("unix:///tmp/r.sock");
  EXPECT_EQ(c.topology, Topology::single);
  EXPECT_EQ(c.unix_socket, "/tmp/r.sock");
  EXPECT_EQ(c.database, 0);

  c = Config::from_url("unix:///var/run/redis/redis.sock?db=3&user=bob&password=p%26w");
  EXPECT_EQ(c.unix_socket, "/var/run/redis/redis.sock");
  EXPECT_EQ(c.database, 3);
  EXPECT_EQ(c.username, "bob");
  EXPECT_EQ(c.password, "p&w");

  c = Config::from_url("unix://:pw@/tmp/my%20r.sock");
  EXPECT_EQ(c.password, "pw");
  EXPECT_EQ(c.unix_socket, "/tmp/my r.sock");
}

TEST(ConfigFromUrl, BadUnixSocket) {
  EXPECT_TRUE(url_fails("unix://localhost/tmp/r.sock", "unix_socket"));
  EXPECT_TRUE(url_fails("unix://", "unix_socket"));
  EXPECT_TRUE(url_fails("unix:///", "unix_socket"));
  EXPECT_TRUE(url_fails("unix://?db=1", "unix_socket"));
  EXPECT_TRUE(url_fails("unix:///tmp/r.sock?db=x", "database"));
}

// ---------------------------------------------------------------------------------------------
// from_url: redis-sentinel://

TEST(ConfigFromUrl, Sentinel) {
  Config c = Config::from_url("redis-sentinel://s1,s2:26380,10.0.0.3/mymaster");
  EXPECT_EQ(c.topology, Topology::sentinel);
  EXPECT_EQ(c.sentinel_master, "mymaster");
  ASSERT_EQ(c.seeds.size(), 3u);
  EXPECT_EQ(c.seeds[0].host, "s1");
  EXPECT_EQ(c.seeds[0].port, 26379);
  EXPECT_EQ(c.seeds[1].host, "s2");
  EXPECT_EQ(c.seeds[1].port, 26380);
  EXPECT_EQ(c.seeds[2].host, "10.0.0.3");
  EXPECT_EQ(c.seeds[2].port, 26379);
  EXPECT_EQ(c.database, 0);

  c = Config::from_url("redis-sentinel://u:p%40w@[::1]:5000,[::2]/my%2Dmaster/3?timeout=1s");
  EXPECT_EQ(c.username, "u");
  EXPECT_EQ(c.password, "p@w");
  ASSERT_EQ(c.seeds.size(), 2u);
  EXPECT_EQ(c.seeds[0].host, "::1");
  EXPECT_EQ(c.seeds[0].port, 5000);
  EXPECT_EQ(c.seeds[1].host, "::2");
  EXPECT_EQ(c.seeds[1].port, 26379);
  EXPECT_EQ(c.sentinel_master, "my-master");
  EXPECT_EQ(c.database, 3);
  EXPECT_EQ(c.timeout, 1s);
}

TEST(ConfigFromUrl, BadSentinel) {
  EXPECT_TRUE(url_fails("redis-sentinel://s1", "sentinel_master"));
  EXPECT_TRUE(url_fails("redis-sentinel://s1/", "sentinel_master"));
  EXPECT_TRUE(url_fails("redis-sentinel://s1//2", "sentinel_master"));
  EXPECT_TRUE(url_fails("redis-sentinel://s1/m/x", "database"));
  EXPECT_TRUE(url_fails("redis-sentinel://s1/m/1/2", "master_name"));
  EXPECT_TRUE(url_fails("redis-sentinel://s1,,s2/m", "host"));
  EXPECT_TRUE(url_fails("redis-sentinel://s1,/m", "host"));
  EXPECT_TRUE(url_fails("redis-sentinel:///m", "host"));
  EXPECT_TRUE(url_fails("redis-sentinel://s1:0/m", "port"));
}

// ---------------------------------------------------------------------------------------------
// from_url: redis-cluster://

TEST(ConfigFromUrl, Cluster) {
  Config c = Config::from_url("redis-cluster://n1:7000,n2:7001,n3");
  EXPECT_EQ(c.topology, Topology::cluster);
  ASSERT_EQ(c.seeds.size(), 3u);
  EXPECT_EQ(c.seeds[0].host, "n1");
  EXPECT_EQ(c.seeds[0].port, 7000);
  EXPECT_EQ(c.seeds[1].host, "n2");
  EXPECT_EQ(c.seeds[1].port, 7001);
  EXPECT_EQ(c.seeds[2].host, "n3");
  EXPECT_EQ(c.seeds[2].port, 6379);

  c = Config::from_url("redis-cluster://:pw@n1:7000/0");
  EXPECT_EQ(c.password, "pw");
  EXPECT_EQ(c.database, 0);
  EXPECT_EQ(Config::from_url("redis-cluster://n1/").seeds.size(), 1u);
}

TEST(ConfigFromUrl, ClusterHasOnlyDatabaseZero) {
  EXPECT_TRUE(url_fails("redis-cluster://n1:7000/1", "database"));
  EXPECT_TRUE(url_fails("redis-cluster://n1:7000?db=2", "database"));
  EXPECT_TRUE(url_fails("redis-cluster://n1:7000/x", "database"));
  EXPECT_TRUE(url_fails("redis-cluster://n1:7000/0/0", "redis-cluster"));
  EXPECT_TRUE(url_fails("redis-cluster://", "host"));
}

// ---------------------------------------------------------------------------------------------
// from_url: query options

TEST(ConfigFromUrl, EachQueryOption) {
  EXPECT_EQ(Config::from_url("redis://h?timeout=250ms").timeout, 250ms);
  EXPECT_EQ(Config::from_url("redis://h?connect_timeout=3s").connect_timeout, 3s);
  EXPECT_EQ(Config::from_url("redis://h?retry_attempts=5").retry_attempts, 5);
  EXPECT_EQ(Config::from_url("redis://h?retry_attempts=0").retry_attempts, 0);
  EXPECT_EQ(Config::from_url("redis://h?retry_interval=1m").retry_interval, 1min);
  EXPECT_EQ(Config::from_url("redis://h?retry_interval=0").retry_interval, 0ms);
  EXPECT_EQ(Config::from_url("redis://h?client_name=worker-1").client_name, "worker-1");
  EXPECT_EQ(Config::from_url("redis://h?lock_watchdog_timeout=1h").lock_watchdog_timeout, 1h);
  EXPECT_EQ(Config::from_url("redis://h?subscription_linger=250ms").subscription_linger, 250ms);
  EXPECT_FALSE(Config::from_url("rediss://h?verify_peer=0").tls_options.verify_peer);
  EXPECT_TRUE(Config::from_url("rediss://h?verify_peer=1").tls_options.verify_peer);
  EXPECT_EQ(Config::from_url("rediss://h?ca_file=/etc/my%20ca.pem").tls_options.ca_file,
            "/etc/my ca.pem");
  const Config mtls = Config::from_url("rediss://h?cert_file=/c.pem&key_file=/k.pem");
  EXPECT_EQ(mtls.tls_options.cert_file, "/c.pem");
  EXPECT_EQ(mtls.tls_options.key_file, "/k.pem");
  EXPECT_EQ(Config::from_url("redis://h?db=5").database, 5);
  EXPECT_EQ(Config::from_url("redis://h?user=carol").username, "carol");
  EXPECT_EQ(Config::from_url("redis://h?password=a%26b%3Dc").password, "a&b=c");
}

TEST(ConfigFromUrl, QueryOverridesUrlParts) {
  const Config c = Config::from_url("redis://u:p@h/1?db=2&user=v&password=q");
  EXPECT_EQ(c.database, 2);
  EXPECT_EQ(c.username, "v");
  EXPECT_EQ(c.password, "q");
}

TEST(ConfigFromUrl, SeveralOptionsRepeatsAndEmptyItems) {
  const Config c = Config::from_url("redis://h:6380/4?&timeout=1s&&subscription_linger=2s&timeout=2s&");
  EXPECT_EQ(c.port, 6380);
  EXPECT_EQ(c.database, 4);
  EXPECT_EQ(c.timeout, 2s);  // the last one wins
  EXPECT_EQ(c.subscription_linger, 2s);
  EXPECT_EQ(Config::from_url("redis://h?").host, "h");
  EXPECT_EQ(Config::from_url("redis://h/?timeout=5").timeout, 5ms);
}

// retry_attempts had no upper bound: "?retry_attempts=200000000" passed (its release records
// still fit max_duration) and so did 2147483647 with "?timeout=1&retry_interval=0": a failed
// request was resent for years, and timeout * (retry_attempts + 1) overflowed an int. It is
// bounded as renewal_batch_size and busy_poll are: "must be in 0..100".
TEST(ConfigFromUrl, RetryAttemptsAboveTheBoundAreRefused) {
  EXPECT_EQ(Config::from_url("redis://h?retry_attempts=100").retry_attempts, 100);
  EXPECT_TRUE(url_fails("redis://h?retry_attempts=101", "retry_attempts must be in 0..100"));
  EXPECT_TRUE(url_fails("redis://h?retry_attempts=200000000", "retry_attempts must be in 0..100"));
  EXPECT_TRUE(url_fails("redis://h?timeout=1&retry_interval=0&retry_attempts=2147483647",
                        "retry_attempts must be in 0..100"));
  EXPECT_TRUE(url_fails("redis://h?retry_attempts=-1", "retry_attempts must be in 0..100"));
}

TEST(ConfigFromUrl, BadQueryOptions) {
  EXPECT_TRUE(url_fails("redis://h?foo=1", "'foo'"));
  EXPECT_TRUE(url_fails("redis://h?Timeout=1s", "'Timeout'"));
  EXPECT_TRUE(url_fails("redis://h?timeout", "timeout"));
  EXPECT_TRUE(url_fails("redis://h?timeout=abc", "timeout"));
  EXPECT_TRUE(url_fails("redis://h?timeout=", "timeout"));
  EXPECT_TRUE(url_fails("redis://h?timeout=-5", "timeout"));
  EXPECT_TRUE(url_fails("redis://h?timeout=0", "timeout"));  // parses, then validate() refuses
  EXPECT_TRUE(url_fails("redis://h?connect_timeout=1.5s", "connect_timeout"));
  EXPECT_TRUE(url_fails("redis://h?retry_interval=1d", "retry_interval"));
  EXPECT_TRUE(url_fails("redis://h?lock_watchdog_timeout=99999999999999999999", "lock_watchdog"));
  EXPECT_TRUE(url_fails("redis://h?retry_attempts=5x", "retry_attempts"));
  EXPECT_TRUE(url_fails("redis://h?retry_attempts=-1", "retry_attempts"));
  EXPECT_TRUE(url_fails("redis://h?retry_attempts=99999999999", "retry_attempts"));
  EXPECT_TRUE(url_fails("redis://h?subscription_linger=-1", "subscription_linger"));
  EXPECT_TRUE(url_fails("redis://h?subscription_linger=two", "subscription_linger"));
  EXPECT_TRUE(url_fails("redis://h?verify_peer=2", "verify_peer"));
  EXPECT_TRUE(url_fails("redis://h?verify_peer=yes", "verify_peer"));
  EXPECT_TRUE(url_fails("redis://h?db=-1", "database"));
  EXPECT_TRUE(url_fails("redis://h?db=1x", "database"));
  EXPECT_TRUE(url_fails("redis://h?client_name=a%20b", "client_name"));
  EXPECT_TRUE(url_fails("redis://h?cert_file=/c.pem", "key_file"));
  EXPECT_TRUE(url_fails("redis://h?key_file=/k.pem", "cert_file"));
  EXPECT_TRUE(url_fails("redis://h?password=%zz", "password"));
  EXPECT_TRUE(url_fails("redis://h?ti%zzme=1", "option name"));
}

// ---------------------------------------------------------------------------------------------
// validate()

TEST(ConfigValidate, DefaultsAreValid) {
  EXPECT_NO_THROW(Config().validate());
  Config unix_config;
  unix_config.unix_socket = "/tmp/r.sock";
  unix_config.port = 0;  // unused with a unix socket
  unix_config.host.clear();
  EXPECT_NO_THROW(unix_config.validate());
}

TEST(ConfigValidate, ExactMessage) {
  Config c;
  c.timeout = Duration(-5);
  try {
    c.validate();
    FAIL() << "no throw";
  } catch (const ConfigError& e) {
    // std::system_error::what() appends ": " and the category's message after ours.
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("redisync config: timeout must be > 0 (got -5 ms)", 0), 0u) << message;
    EXPECT_EQ(e.value(), errc::invalid_config);
  }
}

struct InvalidCase {
  const char* field;
  std::function<void(Config&)> change;
};

TEST(ConfigValidate, EachRuleNamesItsField) {
  const auto sentinel = [](Config& c) {
    c.topology = Topology::sentinel;
    c.seeds = {{"s1", 26379}};
    c.sentinel_master = "m";
  };
  const auto cluster = [](Config& c) {
    c.topology = Topology::cluster;
    c.seeds = {{"n1", 7000}};
  };
  const std::vector<InvalidCase> cases = {
      {"host", [](Config& c) { c.host.clear(); }},
      {"port", [](Config& c) { c.port = 0; }},
      {"seeds",
       [&](Config& c) {
         sentinel(c);
         c.seeds.clear();
       }},
      {"sentinel_master",
       [&](Config& c) {
         sentinel(c);
         c.sentinel_master.clear();
       }},
      {"seeds",
       [&](Config& c) {
         cluster(c);
         c.seeds.clear();
       }},
      {"seeds",
       [&](Config& c) {
         cluster(c);
         c.seeds.push_back({"n2", 0});
       }},
      {"seeds",
       [&](Config& c) {
         cluster(c);
         c.seeds.push_back({"", 7001});
       }},
      {"unix_socket",
       [&](Config& c) {
         cluster(c);
         c.unix_socket = "/tmp/r.sock";
       }},
      {"database", [](Config& c) { c.database = -1; }},
      {"database",
       [&](Config& c) {
         cluster(c);
         c.database = 1;
       }},
      {"client_name", [](Config& c) { c.client_name = "has space"; }},
      {"client_name", [](Config& c) { c.client_name = "line\nbreak"; }},
      {"tls_options.key_file", [](Config& c) { c.tls_options.cert_file = "/c.pem"; }},
      {"tls_options.cert_file", [](Config& c) { c.tls_options.key_file = "/k.pem"; }},
      {"connect_timeout", [](Config& c) { c.connect_timeout = 0ms; }},
      {"timeout", [](Config& c) { c.timeout = 0ms; }},
      {"retry_attempts", [](Config& c) { c.retry_attempts = -1; }},
      {"retry_attempts must be in 0..100", [](Config& c) { c.retry_attempts = 101; }},
      {"retry_interval", [](Config& c) { c.retry_interval = -1ms; }},
      {"reconnection_delay_min", [](Config& c) { c.reconnection_delay_min = 0ms; }},
      {"reconnection_delay_max", [](Config& c) { c.reconnection_delay_max = 10ms; }},
      {"subscription_timeout", [](Config& c) { c.subscription_timeout = 0ms; }},
      {"lock_watchdog_timeout", [](Config& c) { c.lock_watchdog_timeout = 0ms; }},
      {"renewal_batch_size", [](Config& c) { c.renewal_batch_size = 0; }},
      {"renewal_batch_size", [](Config& c) { c.renewal_batch_size = 10001; }},
      {"fair_lock_wait_timeout", [](Config& c) { c.fair_lock_wait_timeout = 0ms; }},
      {"subscription_linger", [](Config& c) { c.subscription_linger = -1ms; }},
      {"slaves_sync_timeout", [](Config& c) { c.slaves_sync_timeout = -1ms; }},
  };
  for (const InvalidCase& test : cases) {
    Config c;
    test.change(c);
    EXPECT_TRUE(validate_fails(c, test.field)) << test.field;
  }
}

TEST(ConfigValidate, BoundaryValuesAreAccepted) {
  Config c;
  c.retry_attempts = 0;
  c.retry_interval = 0ms;
  c.slaves_sync_timeout = 0ms;
  c.subscription_linger = 0ms;
  c.reconnection_delay_min = c.reconnection_delay_max = 1ms;
  c.renewal_batch_size = 1;
  c.lock_watchdog_timeout = 1ms;
  c.port = 1;
  EXPECT_NO_THROW(c.validate());
  c.renewal_batch_size = 10000;
  c.retry_attempts = 100;
  c.port = 65535;
  c.client_name = "svc:worker-1";
  c.tls_options.cert_file = "/c.pem";
  c.tls_options.key_file = "/k.pem";
  EXPECT_NO_THROW(c.validate());
}

TEST(ConfigValidate, ValidTopologies) {
  Config sentinel;
  sentinel.topology = Topology::sentinel;
  sentinel.seeds = {{"s1", 26379}, {"::1", 26380}};
  sentinel.sentinel_master = "mymaster";
  sentinel.database = 3;
  EXPECT_NO_THROW(sentinel.validate());

  Config cluster;
  cluster.topology = Topology::cluster;
  cluster.seeds = {{"n1", 7000}};
  EXPECT_NO_THROW(cluster.validate());
}

// ---------------------------------------------------------------------------------------------
// describe()

TEST(ConfigDescribe, Forms) {
  EXPECT_EQ(Config().describe(), "127.0.0.1:6379");
  EXPECT_EQ(Config::from_url("redis://:secret@h:6380").describe(), "h:6380");
  EXPECT_EQ(Config::from_url("rediss://u:secret@secure.example.com:6380").describe(),
            "rediss://secure.example.com:6380");
  EXPECT_EQ(Config::from_url("redis://[::1]:7000").describe(), "[::1]:7000");
  EXPECT_EQ(Config::from_url("unix:///tmp/r.sock?password=secret").describe(), "unix:/tmp/r.sock");
  EXPECT_EQ(Config::from_url("redis-sentinel://:secret@h1,h2/mymaster").describe(),
            "sentinel mymaster@h1:26379,h2:26379");
  EXPECT_EQ(Config::from_url("redis-cluster://h1:7000,h2:7001").describe(),
            "cluster h1:7000,h2:7001");
}

TEST(ConfigDescribe, DatabaseAndTlsSuffixes) {
  EXPECT_EQ(Config::from_url("redis://h/3").describe(), "h:6379 db 3");
  EXPECT_EQ(Config::from_url("unix:///tmp/r.sock?db=2").describe(), "unix:/tmp/r.sock db 2");
  EXPECT_EQ(Config::from_url("redis-sentinel://h1/m/1").describe(), "sentinel m@h1:26379 db 1");
  Config c = Config::from_url("redis-cluster://h1:7000");
  c.tls = true;
  EXPECT_EQ(c.describe(), "cluster h1:7000 (tls)");
}

TEST(ConfigDescribe, NeverShowsSecrets) {
  const Config c = Config::from_url("rediss://alice:hunter2@h?password=hunter3");
  EXPECT_EQ(c.describe().find("hunter"), std::string::npos);
  EXPECT_EQ(c.describe().find("alice"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// parse_duration()

TEST(ParseDuration, Good) {
  EXPECT_EQ(parse_duration("0", "t"), 0ms);
  EXPECT_EQ(parse_duration("1500", "t"), 1500ms);
  EXPECT_EQ(parse_duration("250ms", "t"), 250ms);
  EXPECT_EQ(parse_duration("0s", "t"), 0ms);
  EXPECT_EQ(parse_duration("3s", "t"), 3s);
  EXPECT_EQ(parse_duration("30s", "t"), 30s);
  EXPECT_EQ(parse_duration("1m", "t"), 1min);
  EXPECT_EQ(parse_duration("5m", "t"), 5min);
  EXPECT_EQ(parse_duration("1h", "t"), 1h);
  EXPECT_EQ(parse_duration("007s", "t"), 7s);
  const auto max = std::numeric_limits<Duration::rep>::max();
  EXPECT_EQ(parse_duration(std::to_string(max), "t").count(), max);
  EXPECT_EQ(parse_duration(std::to_string(max / 1000) + "s", "t").count(), max / 1000 * 1000);
}

TEST(ParseDuration, Bad) {
  // clang-format off
  const char* const bad_texts[] = {
      "", "-1", "-1s", "+5", "abc", "ms", "s", "1.5s", " 1s", "1s ", "1 s", "1d", "1S", "1MS",
      "1sec", "1sms", "1e3", "0x10", "99999999999999999999", "9223372036854775807s",
      "3074457345618259h"};
  // clang-format on
  for (const char* text : bad_texts) {
    EXPECT_TRUE(throws_config_error([&] { (void)parse_duration(text, "my_option"); }, "my_option"))
        << "'" << text << "'";
  }
}

TEST(ParseDuration, MessageQuotesTheText) {
  try {
    (void)parse_duration("12parsecs", "retry_interval");
    FAIL() << "no throw";
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("retry_interval"), std::string::npos) << message;
    EXPECT_NE(message.find("12parsecs"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace redisync
