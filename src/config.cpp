#include "redisync/config.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "redisync/errors.h"

namespace redisync {
namespace {

constexpr std::uint16_t kDefaultRedisPort = 6379;
constexpr std::uint16_t kDefaultSentinelPort = 26379;

[[noreturn]] void fail(const std::string& message) {
  throw ConfigError("redisync config: " + message);
}

std::string ms_text(Duration d) { return std::to_string(d.count()) + " ms"; }

// Parses all of `text` as a decimal integer: no sign for unsigned types, no '+', no spaces,
// no trailing junk, no overflow.
template <typename T>
bool parse_int(std::string_view text, T& out) {
  if (text.empty()) return false;
  const char* first = text.data();
  const char* last = first + text.size();
  auto [ptr, ec] = std::from_chars(first, last, out);
  return ec == std::errc() && ptr == last;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
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

// RFC 3986 percent-decoding. '+' is left alone: it means space only in HTML form encoding, and
// passwords often contain a literal '+'. The error never echoes `text` (it may be a password).
std::string percent_decode(std::string_view text, std::string_view what) {
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

int parse_database(std::string_view text, std::string_view source) {
  int db = 0;
  if (!parse_int(text, db) || db < 0) {
    fail("database must be a non-negative integer (got '" + std::string(text) + "' in " +
         std::string(source) + ")");
  }
  return db;
}

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

int parse_int_option(const std::string& name, const std::string& value) {
  int result = 0;
  if (!parse_int(value, result)) {
    fail("option " + name + " must be an integer (got '" + value + "')");
  }
  return result;
}

// Microsecond settings: "300us", or any duration parse_duration takes ("1ms").
std::chrono::microseconds parse_micros(const std::string& value, const std::string& name) {
  const bool micros = value.size() > 2 && value.compare(value.size() - 2, 2, "us") == 0 &&
                      std::all_of(value.begin(), value.end() - 2, is_digit);
  if (micros) {
    return std::chrono::microseconds(
        parse_duration(value.substr(0, value.size() - 2), name).count());
  }
  return parse_duration(value, name);
}

void apply_option(const std::string& name, const std::string& value, Config& config) {
  if (name == "timeout") {
    config.timeout = parse_duration(value, name);
  } else if (name == "connect_timeout") {
    config.connect_timeout = parse_duration(value, name);
  } else if (name == "retry_attempts") {
    config.retry_attempts = parse_int_option(name, value);
  } else if (name == "retry_interval") {
    config.retry_interval = parse_duration(value, name);
  } else if (name == "client_name") {
    config.client_name = value;
  } else if (name == "lock_watchdog_timeout") {
    config.lock_watchdog_timeout = parse_duration(value, name);
  } else if (name == "sentinel_user") {
    config.sentinel_username = value;
  } else if (name == "sentinel_password") {
    config.sentinel_password = value;
  } else if (name == "subscription_linger") {
    config.subscription_linger = parse_duration(value, name);
  } else if (name == "busy_poll") {
    config.busy_poll = parse_micros(value, name);
  } else if (name == "starvation_guard") {
    config.starvation_guard = parse_duration(value, name);
  } else if (name == "handoff") {
    if (value == "wake") {
      config.handoff = Handoff::wake;
    } else if (value == "grant") {
      config.handoff = Handoff::grant;
    } else {
      fail("option handoff must be wake or grant (got '" + value + "')");
    }
  } else if (name == "grant_lease") {
    config.grant_lease = parse_duration(value, name);
  } else if (name == "verify_peer") {
    if (value == "1" || value == "true") {
      config.tls_options.verify_peer = true;
    } else if (value == "0" || value == "false") {
      config.tls_options.verify_peer = false;
    } else {
      fail("option verify_peer must be 0 or 1 (got '" + value + "')");
    }
  } else if (name == "ca_file") {
    config.tls_options.ca_file = value;
  } else if (name == "cert_file") {
    config.tls_options.cert_file = value;
  } else if (name == "key_file") {
    config.tls_options.key_file = value;
  } else if (name == "db") {
    config.database = parse_database(value, "option db");
  } else if (name == "user") {
    config.username = value;
  } else if (name == "password") {
    config.password = value;
  } else {
    fail("unknown option '" + name + "'");
  }
}

bool is_password_option(const std::string& name) {
  return name == "password" || name == "sentinel_password";
}

// One "name=value" item; returns the option's name.
std::string apply_item(std::string_view item, Config& config) {
  const std::size_t eq = item.find('=');
  const std::string name = percent_decode(item.substr(0, eq), "option name");
  if (eq == std::string_view::npos) fail("option '" + name + "' needs a value");
  const std::string value = percent_decode(item.substr(eq + 1), "option " + name);
  apply_option(name, value, config);
  return name;
}

constexpr const char* kPasswordEscapes = "write '&', '=' and '%' in a password as %26, %3D and %25";

// "a=1&b=2". Keys and values are percent-decoded; a repeated option keeps its last value.
// An unescaped '&' in the value of a password option makes the rest of the password look like
// further options: an error about an option after a password option names it by its position
// only, never by its text. Returns whether any option followed a password option.
bool apply_query(std::string_view query, Config& config) {
  bool after_password = false;
  bool hidden = false;
  int position = 0;
  std::size_t start = 0;
  while (start <= query.size()) {
    std::size_t amp = query.find('&', start);
    if (amp == std::string_view::npos) amp = query.size();
    const std::string_view item = query.substr(start, amp - start);
    start = amp + 1;
    if (item.empty()) continue;  // "?a=1&&b=2" or a trailing '&'
    ++position;
    if (!after_password) {
      after_password = is_password_option(apply_item(item, config));
      continue;
    }
    hidden = true;
    try {
      apply_item(item, config);
    } catch (const ConfigError&) {
      fail("url option " + std::to_string(position) +
           " is invalid; it follows a password option, so it is not shown (it may be part of "
           "the password: " +
           kPasswordEscapes + ")");
    }
  }
  return hidden;
}

std::string endpoint_text(const std::string& host, std::uint16_t port) {
  const bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// Durations redisync stores in Redis or sets timers for stay within max_duration (the
// longest lease Redis can keep; see config.h).
void check_at_most_max(Duration value, const char* field) {
  if (value > max_duration) {
    fail(std::string(field) + " must be <= " + std::to_string(max_duration.count()) +
         " ms (redisync::max_duration; got " + ms_text(value) + ")");
  }
}

void check_positive(Duration value, const char* field) {
  if (value <= Duration::zero()) {
    fail(std::string(field) + " must be > 0 (got " + ms_text(value) + ")");
  }
  check_at_most_max(value, field);
}

void check_non_negative(Duration value, const char* field) {
  check_at_most_max(value, field);
  if (value < Duration::zero()) {
    fail(std::string(field) + " must be >= 0 (got " + ms_text(value) + ")");
  }
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

void Config::validate() const {
  switch (topology) {
    case Topology::single:
      if (unix_socket.empty()) {
        if (host.empty()) fail("host must not be empty");
        if (port == 0) fail("port must be in 1..65535 (got 0)");
      }
      break;
    case Topology::sentinel:
      if (seeds.empty()) fail("seeds must list at least one sentinel (sentinel topology)");
      if (sentinel_master.empty()) fail("sentinel_master must be set (sentinel topology)");
      break;
    case Topology::cluster:
      if (seeds.empty()) fail("seeds must list at least one node (cluster topology)");
      break;
  }
  if (topology != Topology::single && !unix_socket.empty()) {
    fail("unix_socket is only supported by the single topology");
  }
  for (const Endpoint& seed : seeds) {
    if (seed.host.empty()) fail("seeds: a host is empty");
    if (seed.port == 0) fail("seeds: port of " + seed.host + " must be in 1..65535 (got 0)");
  }
  if (database < 0) fail("database must be >= 0 (got " + std::to_string(database) + ")");
  if (topology == Topology::cluster && database != 0) {
    fail("database must be 0 for the cluster topology (got " + std::to_string(database) + ")");
  }
  // Redis refuses CLIENT SETNAME with spaces or non-printable characters; fail here instead of
  // on every connect.
  for (char c : client_name) {
    if (c < '!' || c > '~') {
      fail("client_name must not contain spaces, newlines or non-printable characters");
    }
  }
  if (!tls_options.cert_file.empty() && tls_options.key_file.empty()) {
    fail("tls_options.key_file must be set when tls_options.cert_file is");
  }
  if (tls_options.cert_file.empty() && !tls_options.key_file.empty()) {
    fail("tls_options.cert_file must be set when tls_options.key_file is");
  }

  check_positive(connect_timeout, "connect_timeout");
  check_positive(timeout, "timeout");
  if (retry_attempts < 0) {
    fail("retry_attempts must be >= 0 (got " + std::to_string(retry_attempts) + ")");
  }
  check_non_negative(retry_interval, "retry_interval");
  check_positive(reconnection_delay_min, "reconnection_delay_min");
  if (reconnection_delay_min > reconnection_delay_max) {
    fail("reconnection_delay_min must be <= reconnection_delay_max (got " +
         ms_text(reconnection_delay_min) + " > " + ms_text(reconnection_delay_max) + ")");
  }
  check_positive(subscription_timeout, "subscription_timeout");

  // Only > 0 is required; the watchdog renews every third of this, so very small values
  // mean very frequent renewal traffic.
  check_positive(lock_watchdog_timeout, "lock_watchdog_timeout");
  if (renewal_batch_size < 1 || renewal_batch_size > 10000) {
    fail("renewal_batch_size must be in 1..10000 (got " + std::to_string(renewal_batch_size) + ")");
  }
  check_positive(fair_lock_wait_timeout, "fair_lock_wait_timeout");
  check_non_negative(subscription_linger, "subscription_linger");
  if (busy_poll < std::chrono::microseconds::zero() || busy_poll > std::chrono::seconds(1)) {
    fail("busy_poll must be in 0..1s (got " + std::to_string(busy_poll.count()) + " us)");
  }
  check_non_negative(slaves_sync_timeout, "slaves_sync_timeout");
  check_non_negative(starvation_guard, "starvation_guard");
  if (grant_lease < Duration{100} || grant_lease > Duration{60000}) {
    fail("grant_lease must be in 100ms..60s (got " + ms_text(grant_lease) + ")");
  }
  check_positive(reconnection_delay_max, "reconnection_delay_max");
  // A release record lives (timeout + retry_interval) * retry_attempts (docs/wire-format.md §1.8).
  const double record_ms = (static_cast<double>(timeout.count()) + retry_interval.count()) *
                           std::max(retry_attempts, 1);
  if (record_ms > static_cast<double>(max_duration.count())) {
    fail("(timeout + retry_interval) * retry_attempts must be <= " +
         std::to_string(max_duration.count()) + " ms (the release record's lifetime)");
  }

}

std::string Config::describe() const {
  std::string out;
  switch (topology) {
    case Topology::single:
      if (!unix_socket.empty()) {
        out = "unix:" + unix_socket;
      } else {
        out = (tls ? "rediss://" : "") + endpoint_text(host, port);
      }
      break;
    case Topology::sentinel:
    case Topology::cluster:
      out = topology == Topology::sentinel ? "sentinel " + sentinel_master + "@" : "cluster ";
      for (std::size_t i = 0; i < seeds.size(); ++i) {
        if (i > 0) out += ',';
        out += endpoint_text(seeds[i].host, seeds[i].port);
      }
      break;
  }
  if (database != 0) out += " db " + std::to_string(database);
  // A single TCP server already shows TLS in its "rediss://" prefix.
  if (tls && (topology != Topology::single || !unix_socket.empty())) out += " (tls)";
  return out;
}

Duration parse_duration(const std::string& text, const std::string& what) {
  const auto bad = [&](const std::string& why) -> Duration {
    fail("invalid duration for " + what + ": '" + text + "' " + why);
  };
  std::size_t digits = 0;
  while (digits < text.size() && is_digit(text[digits])) ++digits;
  if (digits == 0) {
    return bad("(expected a non-negative integer of milliseconds, or one with a unit: " +
               std::string("250ms, 3s, 1m, 1h)"));
  }
  std::uint64_t value = 0;
  if (!parse_int(std::string_view(text).substr(0, digits), value)) return bad("(too large)");

  const std::string_view unit = std::string_view(text).substr(digits);
  std::uint64_t factor = 0;
  if (unit.empty() || unit == "ms") {
    factor = 1;
  } else if (unit == "s") {
    factor = 1000;
  } else if (unit == "m") {
    factor = 60'000;
  } else if (unit == "h") {
    factor = 3'600'000;
  } else {
    return bad("(unknown unit '" + std::string(unit) + "'; use ms, s, m or h)");
  }
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<Duration::rep>::max());
  if (value > kMax / factor) return bad("(too large)");
  return Duration(static_cast<Duration::rep>(value * factor));
}

}  // namespace redisync
