// SPDX-License-Identifier: Apache-2.0
#include "status_report.h"

#include <algorithm>
#include <utility>

#include "json_writer.h"
#include "names.h"

namespace redisync::cli {
namespace {

using Lines = std::vector<std::pair<std::string, std::string>>;

std::string lease_text(long long pttl) {
  if (pttl == -1) return "no expiry";
  if (pttl < 0) return "-";
  return std::to_string(pttl) + " ms";
}

std::string holder_text(const Holder& h) {
  return h.owner + " (hold count " + std::to_string(h.count) + ")";
}

void add_holders(Lines& lines, const std::string& label, const std::vector<Holder>& holders) {
  for (const auto& h : holders) lines.emplace_back(label, holder_text(h));
}

void write_holders(JsonWriter& w, std::string_view key, const std::vector<Holder>& holders) {
  w.key(key).begin_array();
  for (const auto& h : holders) {
    w.begin_object().field("owner", h.owner).field("count", h.count).end_object();
  }
  w.end_array();
}

}  // namespace

std::string render_text(const StatusReport& r) {
  Lines lines;
  lines.emplace_back("name", r.name);
  std::string kind = r.kind_label();
  if (r.kind.ambiguous()) {
    kind += " (" + r.kind.candidate_text() + (r.may_be_data ? ", or anybody's number" : "") +
            ": the keys cannot tell)";
  }
  if (kind == kOtherData) kind += " (Redis type " + r.type + ")";
  lines.emplace_back("kind", kind);
  if (!r.state.empty()) lines.emplace_back("state", r.state);
  add_holders(lines, "holder", r.holders);
  if (r.kind.is(Kind::read_write_lock)) {
    lines.emplace_back("mode", r.mode);
    add_holders(lines, "writer", r.writers);
    add_holders(lines, "reader", r.readers);
  }
  if (r.value) {
    lines.emplace_back("value", *r.value);
    if (r.permits) {
      // Permits only when the layout proves a semaphore; else a count of any of the candidates.
      lines.emplace_back(
          r.kind.is(Kind::permit_expirable_semaphore) ? "permits available" : "count",
          std::to_string(*r.permits));
    }
  }
  for (const auto& p : r.acquired_permits) {
    std::string text = p.id + " ";
    if (!p.remaining_ms) {
      text += "(no expiry)";
    } else if (*p.remaining_ms <= 0) {
      text += "(expired, not yet reclaimed)";
    } else {
      text += "(lease " + std::to_string(*p.remaining_ms) + " ms)";
    }
    lines.emplace_back("permit", text);
  }
  if (r.rate_limiter) {
    const auto& rl = *r.rate_limiter;
    lines.emplace_back("rate", std::to_string(rl.rate) + " per " +
                                   std::to_string(rl.interval_ms) + " ms (" + rl.type + ")");
    lines.emplace_back("keep-alive", rl.keep_alive_ms > 0
                                         ? std::to_string(rl.keep_alive_ms) + " ms"
                                         : "none");
    if (rl.windows.empty()) lines.emplace_back("window", "none yet");
    for (const auto& w : rl.windows) {
      lines.emplace_back(w.client.empty() ? "window" : "window " + w.client,
                         std::to_string(w.available) + " available, " +
                             std::to_string(w.granted) + " granted in the current interval (" +
                             std::to_string(w.grants) + " acquisitions)");
    }
  }
  if (r.pttl_ms) lines.emplace_back("lease", lease_text(*r.pttl_ms));
  if (r.lock_family) {
    if (r.queue.empty() && r.type != "none") lines.emplace_back("queue", "empty");
    for (std::size_t i = 0; i < r.queue.size(); ++i) {
      const auto& q = r.queue[i];
      std::string text = q.owner;
      if (q.remaining_ms) text += " (deadline in " + std::to_string(*q.remaining_ms) + " ms)";
      lines.emplace_back("waiter " + std::to_string(i + 1), text);
    }
    if (r.fence_token) lines.emplace_back("fence token", *r.fence_token);
  }

  for (auto& [k, v] : lines) {  // names, owners, values come from the keys' writers
    k = printable(k);
    v = printable(v);
  }
  std::size_t width = 0;
  for (const auto& [k, v] : lines) width = std::max(width, k.size());
  std::string out;
  for (const auto& [k, v] : lines) {
    out += k + ":" + std::string(width - k.size() + 1, ' ') + v + "\n";
  }
  return out;
}

std::string render_json(const StatusReport& r) {
  JsonWriter w;
  w.begin_object();
  write_name_fields(w, r.name);  // exact bytes in name_hex
  w.field("type", r.type).field("kind", r.kind_label());
  if (r.kind.ambiguous()) {
    w.key("candidates").begin_array();
    for (Kind k : r.kind.candidates) w.value(kind_name(k));
    w.end_array();
    if (r.may_be_data) w.field("may_be_data", true);
  }
  if (!r.state.empty()) w.field("state", r.state);
  if (r.lock_family && r.type != "none") write_holders(w, "holders", r.holders);
  if (r.kind.is(Kind::read_write_lock)) {
    w.field("mode", r.mode);
    write_holders(w, "writers", r.writers);
    write_holders(w, "readers", r.readers);
  }
  if (r.value) {
    w.field("value", *r.value);
    if (r.permits) w.field("permits", *r.permits);
  }
  if (r.kind.is(Kind::permit_expirable_semaphore)) {
    w.key("acquired_permits").begin_array();
    for (const auto& p : r.acquired_permits) {
      w.begin_object().field("id", p.id).key("remaining_ms");
      if (p.remaining_ms) {
        w.value(*p.remaining_ms);
      } else {
        w.null();
      }
      w.end_object();
    }
    w.end_array();
  }
  if (r.rate_limiter) {
    const auto& rl = *r.rate_limiter;
    w.field("rate", rl.rate)
        .field("interval_ms", rl.interval_ms)
        .field("rate_type", rl.type)
        .field("keep_alive_ms", rl.keep_alive_ms);
    w.key("windows").begin_array();
    for (const auto& win : rl.windows) {
      w.begin_object().key("client");
      if (win.client.empty()) {
        w.null();
      } else {
        w.value(win.client);
      }
      w.field("available", win.available)
          .field("granted", win.granted)
          .field("grants", win.grants)
          .end_object();
    }
    w.end_array();
  }
  if (r.pttl_ms) w.field("lease_ms", *r.pttl_ms);
  if (r.lock_family) {
    w.key("queue").begin_array();
    for (const auto& q : r.queue) {
      w.begin_object().field("owner", q.owner);
      w.key("deadline_ms");
      if (q.deadline_ms) {
        w.value(*q.deadline_ms);
      } else {
        w.null();
      }
      w.key("remaining_ms");
      if (q.remaining_ms) {
        w.value(*q.remaining_ms);
      } else {
        w.null();
      }
      w.end_object();
    }
    w.end_array();
    w.key("fence_token");
    if (r.fence_token) {
      w.value(*r.fence_token);
    } else {
      w.null();
    }
  }
  w.end_object();
  return w.str();
}

}  // namespace redisync::cli
