// SPDX-License-Identifier: Apache-2.0
#include "status_command.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <iostream>

#include "layout_kind.h"
#include "names.h"
#include "redis_option.h"
#include "redisync/errors.h"
#include "server_numbers.h"
#include "status_rate_limiter.h"

namespace redisync::cli {
namespace {

// Redisson's "never expires" permit score (docs/wire-format.md §8).
constexpr long long kNoExpiryScore = 922337203685477LL;

// Sorted-set scores come back as text and may be written as doubles ("1.7e12"); read
// strictly (server_numbers.h: no "nan", "inf" or trailing text).
std::optional<long long> score_of(const Reply& reply) {
  if (!reply.is_string()) return std::nullopt;
  return score_text(reply.str);
}

long long epoch_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string hex(const std::string& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void inspect_hash(Client& client, const LayoutFacts& facts, StatusReport& r) {
  if (r.kind.is(Kind::rate_limiter)) {
    inspect_rate_limiter(client, facts.fields, r);
  } else if (r.kind.is(Kind::read_write_lock)) {
    for (const auto& [field, value] : facts.fields) {
      if (field == "mode") {
        r.mode = value;
        continue;
      }
      Holder h{field, integer_text(value).value_or(0)};
      (ends_with(field, ":write") ? r.writers : r.readers).push_back(h);
    }
    r.state = r.mode == "write" ? "write-locked" : "read-locked";
  } else if (!r.kind.candidates.empty()) {  // lock, fair-lock, fenced-lock
    for (const auto& [field, value] : facts.fields) {
      r.holders.push_back(Holder{field, integer_text(value).value_or(0)});
    }
    r.state = "held";
    r.lock_family = true;
  }
}

void inspect_string(Client& client, const LayoutFacts& facts, StatusReport& r) {
  r.value = facts.value;
  r.permits = integer_text(*r.value);
  if (!r.kind.is(Kind::permit_expirable_semaphore)) return;
  const std::string timeouts = hash_tag(r.name) + ":timeout";
  const Reply permits = client.execute({"ZRANGE", timeouts, "0", "-1", "WITHSCORES"});
  const long long now = epoch_ms_now();
  for (std::size_t i = 0; i + 1 < permits.elements.size(); i += 2) {
    const std::string& raw = permits.elements[i].str;
    Permit p;
    p.id = raw.size() == 16 ? hex(raw) : raw;  // Redisson < 3.17 stored hex text
    const auto score = score_of(permits.elements[i + 1]);
    if (score && *score != kNoExpiryScore) p.remaining_ms = *score - now;
    r.acquired_permits.push_back(p);
  }
}

void inspect_lock_extras(Client& client, StatusReport& r) {
  const std::string tag = hash_tag(r.name);
  const std::string queue_key = "redisson_lock_queue:" + tag;
  const std::string timeout_key = "redisson_lock_timeout:" + tag;
  if (key_type(client, queue_key) == "list") {
    const Reply waiters = client.execute({"LRANGE", queue_key, "0", "-1"});
    const bool has_deadlines = key_type(client, timeout_key) == "zset";
    const long long now = epoch_ms_now();
    for (const auto& w : waiters.elements) {
      Waiter waiter{w.str, std::nullopt, std::nullopt};
      if (has_deadlines) {
        waiter.deadline_ms = score_of(client.execute({"ZSCORE", timeout_key, w.str}));
        if (waiter.deadline_ms) waiter.remaining_ms = *waiter.deadline_ms - now;
      }
      r.queue.push_back(waiter);
    }
  }
  const std::string token_key = "redisson_lock_token:" + tag;
  if (key_type(client, token_key) == "string") {
    r.fence_token = client.execute({"GET", token_key}).str;
  }
}

}  // namespace

StatusReport inspect(Client& client, const std::string& name) {
  StatusReport r;
  r.name = name;
  const LayoutFacts facts = read_layout(client, name);  // layout_kind.h: the one rule
  r.type = facts.type;
  r.kind = kind_of_layout(facts);
  r.may_be_data = may_be_plain_data(facts);
  if (r.type == "none") {
    r.state = "free";
    r.lock_family = true;
  } else if (r.type == "hash") {
    inspect_hash(client, facts, r);
  } else if (r.type == "string") {
    inspect_string(client, facts, r);
  }
  if (r.type != "none") r.pttl_ms = client.execute({"PTTL", name}).integer;
  if (r.lock_family) inspect_lock_extras(client, r);
  return r;
}

CLI::App* add_status_command(CLI::App& app, StatusOptions& o) {
  CLI::App* status = app.add_subcommand("status", "Show a lock's or synchronizer's state in Redis");
  status->footer(
      "Show what Redis holds under NAME: lock holders and hold counts, read-write mode,\n"
      "remaining lease, fair-lock queue, fencing token, semaphore permits, rate limiter\n"
      "configuration and windows. Exit 0 (also\n"
      "when free); 69 if Redis is unreachable.");
  add_redis_option(*status, o.redis_url);
  status->add_flag("--json", o.json, "Print one JSON object instead of aligned lines");
  add_name_options(*status, o.name, o.name_hex);  // names.h
  return status;
}

int status_command(const StatusOptions& o) {
  const std::string name = given_name(o.name, o.name_hex, "status");
  Client client(config_from_url(o.redis_url));
  const StatusReport report = inspect(client, name);
  std::cout << (o.json ? render_json(report) + "\n" : render_text(report)) << std::flush;
  return 0;
}

}  // namespace redisync::cli
