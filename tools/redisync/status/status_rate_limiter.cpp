// SPDX-License-Identifier: Apache-2.0
#include "status_rate_limiter.h"

#include <algorithm>

#include "server_numbers.h"

namespace redisync::cli {
namespace {

const std::string* field(const std::vector<std::pair<std::string, std::string>>& fields,
                         const std::string& key) {
  for (const auto& [k, v] : fields) {
    if (k == key) return &v;
  }
  return nullptr;
}

// Permits of one grant: 1 byte id length, the id, 4 bytes little-endian (Lua 'Bc0I').
long long grant_permits(const std::string& member) {
  if (member.empty()) return 0;
  const std::size_t len = static_cast<unsigned char>(member[0]);
  if (member.size() != 1 + len + 4) return 0;
  long long p = 0;
  for (int i = 3; i >= 0; --i) p = p * 256 + static_cast<unsigned char>(member[1 + len + i]);
  return p;
}

// S(N, x) of docs/wire-format.md §17.1.
std::string suffixed(const std::string& name, const std::string& x) {
  return (name.find('{') == std::string::npos ? "{" + name + "}" : name) + ":" + x;
}

// `text` with glob specials escaped, for SCAN MATCH.
std::string glob_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

bool is_rate_limiter(const std::vector<std::pair<std::string, std::string>>& fields) {
  return field(fields, "rate") && field(fields, "interval") && field(fields, "type");
}

RateWindow read_rate_window(long long rate, long long interval_ms, long long now_ms,
                            const std::string& client_id, const Reply& value,
                            const Reply& grants_with_scores) {
  RateWindow w;
  w.client = client_id;
  long long live = 0;
  long long expired = 0;
  for (std::size_t i = 0; i + 1 < grants_with_scores.elements.size(); i += 2) {
    const long long p = grant_permits(grants_with_scores.elements[i].str);
    const auto score = score_text(grants_with_scores.elements[i + 1].str);
    if (score && *score <= now_ms - interval_ms) {
      expired += p;
    } else {
      live += p;
      ++w.grants;
    }
  }
  w.granted = live;
  // As the acquire step computes it (§17.3 step 3): the value plus what left the window,
  // recomputed from the live grants when that exceeds the rate; no value = a fresh window.
  const auto stored = value.is_string() ? integer_text(value.str) : std::nullopt;
  long long available = stored ? *stored + expired : rate - live;
  if (available > rate) available = rate - live;
  w.available = available;
  return w;
}

void inspect_rate_limiter(Client& client,
                          const std::vector<std::pair<std::string, std::string>>& fields,
                          StatusReport& r) {
  r.kind = Kind::rate_limiter;
  RateLimiterStatus s;
  s.rate = integer_text(*field(fields, "rate")).value_or(0);
  s.interval_ms = integer_text(*field(fields, "interval")).value_or(0);
  s.type = *field(fields, "type") == "1" ? "per-client" : "overall";
  if (const auto* keep = field(fields, "keepAliveTime")) {
    s.keep_alive_ms = integer_text(*keep).value_or(0);
  }
  const Reply time = client.execute({"TIME"});
  const long long now = integer_text(time.elements.at(0).str).value_or(0) * 1000 +
                        integer_text(time.elements.at(1).str).value_or(0) / 1000;
  const std::string value_key = suffixed(r.name, "value");
  const std::string permits_key = suffixed(r.name, "permits");
  auto window = [&](const std::string& client_id) {
    const std::string tail = client_id.empty() ? "" : ":" + client_id;
    return read_rate_window(
        s.rate, s.interval_ms, now, client_id, client.execute({"GET", value_key + tail}),
        client.execute({"ZRANGE", permits_key + tail, "0", "-1", "WITHSCORES"}));
  };
  if (s.type == "overall") {
    s.windows.push_back(window(""));
  } else {
    // One window per client that has one: its value key "<value key>:<client id>" (bounded
    // scan; in a cluster this sees the node that holds the name's slot).
    const std::string prefix = value_key + ":";
    std::string cursor = "0";
    for (int round = 0; round < 1000; ++round) {
      const Reply page = client.execute(
          {"SCAN", cursor, "MATCH", glob_escape(prefix) + "*", "COUNT", "1000"});
      cursor = page.elements.at(0).str;
      for (const auto& key : page.elements.at(1).elements) {
        s.windows.push_back(window(key.str.substr(prefix.size())));
      }
      if (cursor == "0") break;
    }
    std::sort(s.windows.begin(), s.windows.end(),
              [](const RateWindow& a, const RateWindow& b) { return a.client < b.client; });
  }
  const bool exhausted = std::any_of(s.windows.begin(), s.windows.end(),
                                     [](const RateWindow& w) { return w.available <= 0; });
  r.state = exhausted ? "limited" : "open";
  r.rate_limiter = std::move(s);
}

}  // namespace redisync::cli
