// SPDX-License-Identifier: Apache-2.0
// Config::from_url: the scheme, userinfo, host(s), path and query of a redisync URL.
#include "redisync/config.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "config_parse.h"
#include "redisync/errors.h"

namespace redisync {

using namespace config_parse;

namespace {

constexpr std::uint16_t kDefaultRedisPort = 6379;
constexpr std::uint16_t kDefaultSentinelPort = 26379;

bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

int hex_value(char c) {
  if (is_digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

// RFC 3986 percent-decoding. '+' is left alone: it means space only in HTML form encoding, and
// passwords often contain a literal '+'. The error never echoes `text` (it may be a password).
std::string config_parse::percent_decode(std::string_view text, std::string_view what) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    const int hi = i + 2 < text.size() ? hex_value(text[i + 1]) : -1;
    const int lo = i + 2 < text.size() ? hex_value(text[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      fail("invalid percent-escape in " + std::string(what) +
           " (write '%' as %25; an escape is '%' followed by two hex digits)");
    }
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

namespace {

std::uint16_t parse_port(std::string_view text) {
  unsigned value = 0;
  if (!parse_int(text, value) || value == 0 || value > 65535) {
    fail("port must be a number in 1..65535 (got '" + std::string(text) + "')");
  }
  return static_cast<std::uint16_t>(value);
}

// Hostname or IPv4 address. Underscores are allowed: Docker and Kubernetes names use them.
void check_host_name(std::string_view host) {
  for (char c : host) {
    if (!is_alpha(c) && !is_digit(c) && c != '-' && c != '.' && c != '_') {
      fail("invalid character '" + std::string(1, c) + "' in host '" + std::string(host) + "'");
    }
  }
}

// The text between '[' and ']': an IPv6 address, optionally with a zone ("fe80::1%25eth0",
// RFC 6874). Returns it without brackets and with the zone's %25 decoded, as getaddrinfo wants.
std::string parse_ipv6_literal(std::string_view text) {
  std::string decoded = percent_decode(text, "IPv6 host");
  const std::size_t zone = decoded.find('%');
  const std::string_view address = std::string_view(decoded).substr(0, zone);
  bool ok = !address.empty() && address.find(':') != std::string_view::npos;
  for (char c : address) ok = ok && (hex_value(c) >= 0 || c == ':' || c == '.');
  if (zone != std::string::npos) {
    const std::string_view zone_id = std::string_view(decoded).substr(zone + 1);
    ok = ok && !zone_id.empty();
    for (char c : zone_id) {
      ok = ok && (is_alpha(c) || is_digit(c) || c == '-' || c == '.' || c == '_' || c == '~');
    }
  }
  if (!ok) fail("host '[" + std::string(text) + "]' is not a valid IPv6 address");
  return decoded;
}

// "host", "host:port", "[v6]" or "[v6]:port".
Endpoint parse_endpoint(std::string_view text, std::uint16_t default_port) {
  Endpoint endpoint;
  endpoint.port = default_port;
  std::string_view port_text;
  bool has_port = false;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos) {
      fail("host '" + std::string(text) + "' has '[' without ']'");
    }
    endpoint.host = parse_ipv6_literal(text.substr(1, close - 1));
    const std::string_view after = text.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        fail("unexpected '" + std::string(after) + "' after host '" +
             std::string(text.substr(0, close + 1)) + "'");
      }
      has_port = true;
      port_text = after.substr(1);
    }
  } else {
    const std::size_t colon = text.find(':');
    if (colon != std::string_view::npos && text.find(':', colon + 1) != std::string_view::npos) {
      fail("host '" + std::string(text) + "' looks like an IPv6 address; write it in brackets, " +
           "e.g. redis://[::1]:6379");
    }
    endpoint.host = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) {
      has_port = true;
      port_text = text.substr(colon + 1);
    }
    check_host_name(endpoint.host);
  }
  if (endpoint.host.empty()) fail("host is empty");
  if (has_port) endpoint.port = parse_port(port_text);
  return endpoint;
}

std::vector<Endpoint> parse_seeds(std::string_view text, std::uint16_t default_port) {
  std::vector<Endpoint> seeds;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    seeds.push_back(parse_endpoint(text.substr(start, comma - start), default_port));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return seeds;
}

// Userinfo follows the Redis URI convention of Lettuce and redis-py: "user:password" or
// ":password". A userinfo without ':' is the password alone (as in Lettuce; redis-py would read
// it as a user name), since password-only AUTH is by far the common case.
void apply_userinfo(std::string_view userinfo, Config& config) {
  const std::size_t colon = userinfo.find(':');
  if (colon == std::string_view::npos) {
    config.password = percent_decode(userinfo, "password");
  } else {
    config.username = percent_decode(userinfo.substr(0, colon), "user");
    config.password = percent_decode(userinfo.substr(colon + 1), "password");
  }
}

}  // namespace

int config_parse::parse_database(std::string_view text, std::string_view source) {
  int db = 0;
  if (!parse_int(text, db) || db < 0) {
    fail("database must be a non-negative integer (got '" + std::string(text) + "' in " +
         std::string(source) + ")");
  }
  return db;
}

namespace {

// Splits "/a/b" into {"a", "b"}; "" and "/" give no segments.
std::vector<std::string_view> path_segments(std::string_view path) {
  std::vector<std::string_view> segments;
  if (path.empty() || path == "/") return segments;
  path.remove_prefix(1);  // the leading '/'
  std::size_t start = 0;
  while (true) {
    const std::size_t slash = path.find('/', start);
    segments.push_back(path.substr(start, slash - start));
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return segments;
}

}  // namespace

Config Config::from_url(const std::string& url) {
  if (url.empty()) fail("url is empty");
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos || scheme_end == 0) {
    fail("url must start with a scheme, e.g. redis://host:6379");
  }
  const std::string scheme = ascii_lower(std::string_view(url).substr(0, scheme_end));
  if (scheme != "redis" && scheme != "rediss" && scheme != "unix" && scheme != "redis-sentinel" &&
      scheme != "redis-cluster") {
    fail("unknown url scheme '" + scheme +
         "' (expected redis, rediss, unix, redis-sentinel or redis-cluster)");
  }

  std::string_view rest = std::string_view(url).substr(scheme_end + 3);
  // Rejected rather than ignored: a '#' is most often an unescaped character of a password.
  if (rest.find('#') != std::string_view::npos) {
    fail("url must not contain '#' (write a '#' in a password as %23)");
  }
  // A '/' or '?' before the last '@' is most often an unescaped character of a user name or
  // password: splitting the url there would put part of the password into a host, path or
  // option, and into the error about it. Refused without echoing any of the url.
  if (const std::size_t at = rest.rfind('@');
      at != std::string_view::npos && rest.substr(0, at).find_first_of("/?") != std::string_view::npos) {
    fail("url has a '/' or '?' before its last '@': write '/', '?' and '@' in a user name or "
         "password as %2F, %3F and %40 (the url is not shown: it may hold a password)");
  }
  std::string_view query;
  if (const std::size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  const std::size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  const std::string_view path =
      slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  Config config;
  // The last '@' ends the userinfo, so an unescaped '@' in a password still works.
  if (const std::size_t at = authority.rfind('@'); at != std::string_view::npos) {
    apply_userinfo(authority.substr(0, at), config);
    authority = authority.substr(at + 1);
  }

  if (scheme == "redis" || scheme == "rediss") {
    config.tls = scheme == "rediss";
    Endpoint endpoint = parse_endpoint(authority, kDefaultRedisPort);
    config.host = std::move(endpoint.host);
    config.port = endpoint.port;
    const std::vector<std::string_view> segments = path_segments(path);
    if (segments.size() > 1) fail("database must be a single path segment, e.g. redis://host/2");
    if (segments.size() == 1) config.database = parse_database(segments[0], "url path");
  } else if (scheme == "unix") {
    if (!authority.empty()) {
      fail("unix_socket url takes no host (got '" + std::string(authority) +
           "'); write unix:///path/to/redis.sock");
    }
    if (path.size() < 2) fail("unix_socket path is empty; write unix:///path/to/redis.sock");
    config.unix_socket = percent_decode(path, "unix_socket path");
  } else if (scheme == "redis-sentinel") {
    config.topology = Topology::sentinel;
    config.seeds = parse_seeds(authority, kDefaultSentinelPort);
    const std::vector<std::string_view> segments = path_segments(path);
    if (segments.empty() || segments[0].empty()) {
      fail("sentinel_master is missing; write redis-sentinel://host:26379/master_name");
    }
    if (segments.size() > 2) fail("redis-sentinel url path must be /master_name[/db]");
    config.sentinel_master = percent_decode(segments[0], "sentinel_master");
    if (segments.size() == 2) config.database = parse_database(segments[1], "url path");
  } else {  // redis-cluster
    config.topology = Topology::cluster;
    config.seeds = parse_seeds(authority, kDefaultRedisPort);
    const std::vector<std::string_view> segments = path_segments(path);
    if (segments.size() > 1) fail("redis-cluster url path must be empty or /0");
    if (segments.size() == 1 && parse_database(segments[0], "url path") != 0) {
      fail("database must be 0 for redis-cluster (a cluster has only database 0)");
    }
  }

  if (!apply_query(query, config)) {
    config.validate();
    return config;
  }
  // Options after a password option may be part of the password: no value of theirs is shown.
  try {
    config.validate();
  } catch (const ConfigError&) {
    fail(std::string("the url's options are invalid; the error is not shown, since options "
                     "follow a password option and may be part of the password (") +
         kPasswordEscapes + ")");
  }
  return config;
}

}  // namespace redisync
