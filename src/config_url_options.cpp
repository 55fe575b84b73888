// SPDX-License-Identifier: Apache-2.0
// The query options of a redisync URL ("?timeout=2s&client_name=x"), one Config field each.
#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>

#include "config_parse.h"
#include "redisync/config.h"
#include "redisync/errors.h"

namespace redisync {

using namespace config_parse;

namespace {

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

}  // namespace

// "a=1&b=2". Keys and values are percent-decoded; a repeated option keeps its last value.
// An unescaped '&' in the value of a password option makes the rest of the password look like
// further options: an error about an option after a password option names it by its position
// only, never by its text. Returns whether any option followed a password option.
bool config_parse::apply_query(std::string_view query, Config& config) {
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

}  // namespace redisync
