// SPDX-License-Identifier: Apache-2.0
#include "ls_scan.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>

#include "cli_error.h"
#include "json_writer.h"
#include "names.h"
#include "redis_option.h"
#include "server_numbers.h"
#include "status_rate_limiter.h"
#include "unlock_kinds.h"

namespace redisync::cli {
namespace {

constexpr std::string_view kQueuePrefix = "redisson_lock_queue:";
// A runaway cursor must not loop forever (SCAN always ends; this only bounds a broken server).
constexpr int kMaxScanCalls = 1'000'000;

std::optional<long long> integer_of(std::string_view text) {
  long long v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

// The inverse of TAG(N) (docs/wire-format.md §1.1).
std::string untag(const std::string& tag) {
  if (tag.size() >= 2 && tag.front() == '{' && tag.back() == '}') {
    const std::string inner = tag.substr(1, tag.size() - 2);
    if (inner.find('{') == std::string::npos) return inner;
  }
  return tag;
}

// A helper key of some primitive (shown in its primitive's line), not a name of its own.
bool is_helper_key(const std::string& key) {
  if (key.rfind("redisson_", 0) == 0 || key.rfind("redisync_", 0) == 0) return true;
  if (key.find(":rwlock_timeout:") != std::string::npos) return true;
  const auto close = key.find("}:");
  if (close == std::string::npos) return false;
  const std::string_view suffix = std::string_view(key).substr(close + 2);
  for (std::string_view s : {"timeout", "value", "permits"}) {
    if (suffix == s || (suffix.size() > s.size() && suffix.substr(0, s.size()) == s &&
                        suffix[s.size()] == ':')) {
      return true;
    }
  }
  return false;
}

struct Target {
  std::string host;
  std::uint16_t port = 0;
};

// The masters of a cluster (CLUSTER NODES), each to be scanned on its own.
std::vector<Target> cluster_masters(Client& client) {
  std::vector<Target> masters;
  std::istringstream lines(client.execute({"CLUSTER", "NODES"}).str);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string id;
    std::string address;
    std::string flags;
    if (!(fields >> id >> address >> flags)) continue;
    if (flags.find("master") == std::string::npos || flags.find("fail") != std::string::npos ||
        flags.find("noaddr") != std::string::npos) {
      continue;
    }
    const auto at = address.find('@');
    const std::string hostport = address.substr(0, at);
    const auto colon = hostport.rfind(':');
    if (colon == std::string::npos) continue;
    const auto port = integer_of(hostport.substr(colon + 1));
    if (!port || *port <= 0 || *port > 65535) continue;
    masters.push_back(Target{hostport.substr(0, colon), static_cast<std::uint16_t>(*port)});
  }
  return masters;
}

void scan_one(Client& node, const std::string& pattern, int count, std::set<std::string>& names) {
  std::string cursor = "0";
  for (int calls = 0; calls < kMaxScanCalls; ++calls) {
    const Reply r =
        node.execute({"SCAN", cursor, "MATCH", pattern, "COUNT", std::to_string(count)});
    // Anything but [cursor, [keys...]] is a server or proxy that misbehaves: an error, not an
    // empty (or partial) list shown as the answer.
    const bool shaped = r.is_array() && r.elements.size() == 2 && r.elements[0].is_string() &&
                        r.elements[1].is_array() &&
                        std::all_of(r.elements[1].elements.begin(), r.elements[1].elements.end(),
                                    [](const Reply& key) { return key.is_string(); });
    if (!shaped) {
      throw CliError(kExitFailure,
                     "redis: unexpected reply to SCAN: " + r.to_string().substr(0, 64));
    }
    for (const auto& key : r.elements[1].elements) {
      if (key.str.rfind(kQueuePrefix, 0) == 0) {
        names.insert(untag(key.str.substr(kQueuePrefix.size())));
      } else if (!is_helper_key(key.str)) {
        names.insert(key.str);
      }
    }
    cursor = r.elements[0].str;
    if (cursor == "0") break;
  }
}

void scan_node(Client& node, const std::string& pattern, int count, std::set<std::string>& names) {
  scan_one(node, pattern, count, names);
  // A fair lock nobody holds but somebody queues for has only its queue keys.
  if (pattern.find('{') == std::string::npos) {
    scan_one(node, std::string(kQueuePrefix) + "{" + pattern + "}", count, names);
  }
}

// A rate limiter's configuration and, for an overall one, the permits the next acquire could
// take: the stored value does not count grants that left the window since the last acquire
// (status_rate_limiter.cpp reads the window as the acquire step does).
void describe_rate_limiter(Client& client, const Reply& hash, LsEntry& e) {
  std::vector<std::pair<std::string, std::string>> fields;
  for (std::size_t i = 0; i + 1 < hash.elements.size(); i += 2) {
    fields.emplace_back(hash.elements[i].str, hash.elements[i + 1].str);
  }
  if (!is_rate_limiter(fields)) return;  // a configuration being written: no figures yet
  StatusReport report;
  report.name = e.name;
  inspect_rate_limiter(client, fields, report);
  const auto& status = *report.rate_limiter;
  e.rate = status.rate;
  e.interval_ms = status.interval_ms;
  e.rate_type = status.type;
  if (status.type == "overall" && status.windows.size() == 1) {
    e.permits = status.windows.front().available;
  }
}

// "3600s", "200ms".
std::string interval_text(long long ms) {
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + "s" : std::to_string(ms) + "ms";
}

std::optional<LsEntry> classify(Client& client, const std::string& name) {
  LsEntry e;
  e.name = name;
  const std::string type = key_type(client, name);
  const std::string tag = hash_tag(name);
  const std::string queue = std::string(kQueuePrefix) + tag;
  if (type == "none") {
    if (key_type(client, queue) != "list") return std::nullopt;
    e.kind = "fair-lock";
    e.waiters = client.execute({"LLEN", queue}).integer;
    return e;
  }
  if (type == "hash") {
    const Reply all = client.execute({"HGETALL", name});
    bool owners_only = true;
    bool rate_limiter = false;
    for (std::size_t i = 0; i + 1 < all.elements.size(); i += 2) {
      const std::string& field = all.elements[i].str;
      if (field == "mode") {
        e.mode = all.elements[i + 1].str;
        continue;
      }
      if (field == "rate") rate_limiter = true;
      const auto count = integer_of(all.elements[i + 1].str);
      const std::string base =
          field.ends_with(":write") ? field.substr(0, field.size() - 6) : field;
      if (is_owner_field(base) && count && *count >= 1) {
        e.holders.push_back(field);
      } else {
        owners_only = false;
      }
    }
    if (rate_limiter) {
      e.kind = "rate-limiter";
      e.holders.clear();
      describe_rate_limiter(client, all, e);
    } else if (!owners_only) {
      return std::nullopt;  // a user's hash
    } else if (!e.mode.empty()) {
      e.kind = "rwlock";
    } else if (key_type(client, queue) == "list" ||
               key_type(client, "redisson_lock_timeout:" + tag) == "zset") {
      e.kind = "fair-lock";
      e.waiters = client.execute({"LLEN", queue}).integer;
    } else if (const Reply token = client.execute({"GET", "redisson_lock_token:" + tag});
               token.is_string()) {
      e.kind = "fenced-lock";
      e.token = token.str;
    } else {
      e.kind = "lock";
    }
  } else if (type == "string") {
    const auto value = integer_of(client.execute({"GET", name}).str);
    if (!value) return std::nullopt;
    e.permits = value;
    if (key_type(client, tag + ":timeout") == "zset") {
      e.kind = "expirable-semaphore";
      e.held = client.execute({"ZCARD", tag + ":timeout"}).integer;
    } else {
      e.kind = "semaphore";
    }
  } else {
    return std::nullopt;
  }
  const long long pttl = client.execute({"PTTL", name}).integer;
  if (pttl >= 0 || pttl == -1) e.lease_ms = pttl;
  return e;
}

// "3f2a9c1e…:17" from "<uuid>:<thread>[:write]": enough to tell holders apart on a screen.
std::string short_owner(const std::string& owner) {
  const auto colon = owner.find(':');
  if (colon == std::string::npos || colon <= 8) return owner;
  return owner.substr(0, 8) + ".." + owner.substr(colon);
}

std::string cell(const std::optional<long long>& v) { return v ? std::to_string(*v) : "-"; }

}  // namespace

std::vector<LsEntry> scan_locks(Client& client, const std::string& pattern, int count) {
  std::set<std::string> names;
  if (client.config().topology == Topology::cluster) {
    for (const auto& master : cluster_masters(client)) {
      Config config = client.config();
      config.topology = Topology::single;
      config.seeds.clear();
      config.host = master.host;
      config.port = master.port;
      Client node(config);
      scan_node(node, pattern, count, names);
    }
  } else {
    scan_node(client, pattern, count, names);
  }
  std::vector<LsEntry> entries;
  for (const auto& name : names) {
    if (auto e = classify(client, name)) entries.push_back(std::move(*e));
  }
  return entries;
}

std::string lease_cell(const std::optional<long long>& lease_ms) {
  if (!lease_ms) return "-";
  if (*lease_ms == -1) return "none";
  const long long ms = *lease_ms;
  if (ms < 1000) return std::to_string(ms) + "ms";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000.0);
  return buf;
}

std::string render_ls_text(const std::vector<LsEntry>& entries) {
  if (entries.empty()) return {};
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"KIND", "NAME", "HOLDERS", "LEASE", "WAITERS", "PERMITS", "DETAIL"});
  // Names, owners, modes come from the keys' writers: every cell is printable(), and a name or
  // an owner, one word of its row, printable_word() (a space in it would shift the columns).
  for (const auto& e : entries) {
    std::string holders = std::to_string(e.holders.size());
    if (!e.holders.empty()) holders += " " + printable_word(short_owner(e.holders.front()));
    if (e.holders.size() > 1) holders += ",...";
    std::string detail;
    if (!e.mode.empty()) detail = "mode " + e.mode;
    if (e.token) detail = "token " + *e.token;
    if (e.held) detail = std::to_string(*e.held) + " held";
    if (e.kind == "semaphore") detail = "or a latch's count";
    if (e.rate && e.interval_ms) {
      detail = "rate " + std::to_string(*e.rate) + "/" + interval_text(*e.interval_ms) + " " +
               e.rate_type;
    }
    const bool lockish = e.kind.find("lock") != std::string::npos;
    rows.push_back({printable(e.kind), printable_word(e.name), lockish ? holders : "-",
                    lease_cell(e.lease_ms), cell(e.waiters), cell(e.permits), printable(detail)});
  }
  std::vector<std::size_t> width(rows.front().size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string render_ls_json(const std::vector<LsEntry>& entries) {
  JsonWriter w;
  w.begin_array();
  for (const auto& e : entries) {
    w.begin_object().field("name", e.name).field("kind", e.kind);
    w.key("holders").begin_array();
    for (const auto& h : e.holders) w.value(h);
    w.end_array();
    if (!e.mode.empty()) w.field("mode", e.mode);
    w.key("lease_ms");
    if (e.lease_ms) {
      w.value(*e.lease_ms);
    } else {
      w.null();
    }
    if (e.waiters) w.field("waiters", *e.waiters);
    if (e.permits) w.field("permits", *e.permits);
    if (e.held) w.field("held", *e.held);
    if (e.token) w.field("token", *e.token);
    if (e.rate) w.field("rate", *e.rate);
    if (e.interval_ms) w.field("interval_ms", *e.interval_ms);
    if (!e.rate_type.empty()) w.field("type", e.rate_type);
    w.end_object();
  }
  w.end_array();
  return w.str();
}

}  // namespace redisync::cli
