// SPDX-License-Identifier: Apache-2.0
#include "ls_scan.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <sstream>

#include "cli_error.h"
#include "json_writer.h"
#include "layout_kind.h"
#include "names.h"
#include "redis_option.h"
#include "server_numbers.h"
#include "status_rate_limiter.h"

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

// Named as a helper key of some primitive is (a fair lock's queue, a fencing counter, a
// release record, a permit set...). The name alone does not decide: a lock may be called
// "redisson_x" or "{x}:timeout" too. Helpers are lists, sorted sets and strings; a hash so
// named is listed when its fields are a kind's (classify()).
bool named_like_a_helper(const std::string& key) {
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

// Names found, and which of them are named like a helper key.
struct Found {
  std::set<std::string> names;
  std::set<std::string> helper_like;
};

void scan_one(Client& node, const std::string& pattern, int count, Found& found) {
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
        found.names.insert(untag(key.str.substr(kQueuePrefix.size())));
      } else {
        found.names.insert(key.str);
        if (named_like_a_helper(key.str)) found.helper_like.insert(key.str);
      }
    }
    cursor = r.elements[0].str;
    if (cursor == "0") break;
  }
}

void scan_node(Client& node, const std::string& pattern, int count, Found& found) {
  scan_one(node, pattern, count, found);
  // A fair lock nobody holds but somebody queues for has only its queue keys.
  if (pattern.find('{') == std::string::npos) {
    scan_one(node, std::string(kQueuePrefix) + "{" + pattern + "}", count, found);
  }
}

// A rate limiter's configuration and, for an overall one, the permits the next acquire could
// take: the stored value does not count grants that left the window since the last acquire
// (status_rate_limiter.cpp reads the window as the acquire step does).
void describe_rate_limiter(Client& client, const LayoutFacts& facts, LsEntry& e) {
  StatusReport report;
  report.name = e.name;
  inspect_rate_limiter(client, facts.fields, report);
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

// The kind its keys prove (layout_kind.h) and what its line shows; nullopt for keys in no
// kind's layout, and for counts anybody could have written unless `counts`.
std::optional<LsEntry> classify(Client& client, const std::string& name, bool counts,
                                bool helper_like) {
  // Named like a helper and of a helper's type: a helper (one TYPE call, no more).
  if (helper_like && key_type(client, name) != "hash") return std::nullopt;
  const LayoutFacts facts = read_layout(client, name);
  LsEntry e;
  e.name = name;
  e.kind = kind_of_layout(facts);
  e.may_be_data = may_be_plain_data(facts);
  if (e.kind.candidates.empty() || (e.may_be_data && !counts)) return std::nullopt;
  const std::string tag = hash_tag(name);
  const std::string queue = std::string(kQueuePrefix) + tag;
  if (facts.fair_queue) e.waiters = client.execute({"LLEN", queue}).integer;
  if (facts.type == "none") return e;  // a fair lock's queue: nobody holds it
  if (e.kind.is(Kind::rate_limiter)) {
    describe_rate_limiter(client, facts, e);
  } else if (facts.type == "hash") {
    for (const auto& [field, value] : facts.fields) {
      if (field == "mode") {
        e.mode = value;
      } else {
        e.holders.push_back(field);
      }
    }
    if (e.kind.may_be(Kind::fenced_lock) && facts.fence_counter) {
      e.token = client.execute({"GET", "redisson_lock_token:" + tag}).str;
    }
  } else if (facts.type == "string") {
    e.permits = integer_text(*facts.value);
    if (e.kind.is(Kind::permit_expirable_semaphore)) {
      e.held = client.execute({"ZCARD", tag + ":timeout"}).integer;
    }
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

std::vector<LsEntry> scan_locks(Client& client, const std::string& pattern, int count,
                                bool counts) {
  Found found;
  if (client.config().topology == Topology::cluster) {
    for (const auto& master : cluster_masters(client)) {
      Config config = client.config();
      config.topology = Topology::single;
      config.seeds.clear();
      config.host = master.host;
      config.port = master.port;
      Client node(config);
      scan_node(node, pattern, count, found);
    }
  } else {
    scan_node(client, pattern, count, found);
  }
  std::vector<LsEntry> entries;
  for (const auto& name : found.names) {
    if (auto e = classify(client, name, counts, found.helper_like.contains(name))) {
      entries.push_back(std::move(*e));
    }
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
    if (e.rate && e.interval_ms) {
      detail = "rate " + std::to_string(*e.rate) + "/" + interval_text(*e.interval_ms) + " " +
               e.rate_type;
    }
    const bool lockish = !e.holders.empty() || e.kind.may_be(Kind::lock) ||
                         e.kind.may_be(Kind::fair_lock) || e.kind.may_be(Kind::fenced_lock) ||
                         e.kind.may_be(Kind::read_write_lock);
    if (e.kind.ambiguous()) {
      detail = e.kind.candidate_text() + (e.may_be_data ? ", or data" : "") +
               (detail.empty() ? "" : "; " + detail);
    }
    rows.push_back({e.kind.label(kOtherData), printable_word(e.name), lockish ? holders : "-",
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
    w.begin_object();
    write_name_fields(w, e.name);  // exact bytes in name_hex
    w.field("kind", e.kind.label(kOtherData));
    if (e.kind.ambiguous()) {
      w.key("candidates").begin_array();
      for (Kind k : e.kind.candidates) w.value(kind_name(k));
      w.end_array();
      if (e.may_be_data) w.field("may_be_data", true);
    }
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
