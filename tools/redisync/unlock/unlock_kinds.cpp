// SPDX-License-Identifier: Apache-2.0
#include "unlock_kinds.h"

#include <charconv>

#include "kinds.h"
#include "redis_option.h"
#include "server_numbers.h"

namespace redisync::cli {
namespace {

bool is_integer(std::string_view text, long long* out = nullptr) {
  long long v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty()) return false;
  if (out) *out = v;
  return true;
}

std::string describe_other(Client& client, const std::string& name, const std::string& type) {
  if (type == "string") {
    const std::string value = client.execute({"GET", name}).str;
    if (is_integer(value)) {
      return "a string holding the count " + value + " (a " +
             KindVerdict{Kind::semaphore, Kind::count_down_latch}.candidate_text() +
             " count, or data)";
    }
    return "a string";
  }
  return "a " + type;
}

}  // namespace

bool is_owner_field(const std::string& field) {
  const auto colon = field.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  return is_integer(std::string_view(field).substr(colon + 1));
}

LockProbe probe_lock(Client& client, const std::string& name) {
  LockProbe p;
  p.type = key_type(client, name);
  const std::string tag = hash_tag(name);
  const bool has_queue = key_type(client, "redisson_lock_queue:" + tag) == "list" ||
                         key_type(client, "redisson_lock_timeout:" + tag) == "zset";
  if (p.type == "none") {
    p.family = has_queue ? LockFamily::fair : LockFamily::none;
    return p;
  }
  if (p.type != "hash") {
    p.family = LockFamily::not_a_lock;
    p.description = describe_other(client, name, p.type);
    return p;
  }
  const Reply all = client.execute({"HGETALL", name});
  bool owners_only = true;
  std::string first_odd;
  for (std::size_t i = 0; i + 1 < all.elements.size(); i += 2) {
    const std::string& field = all.elements[i].str;
    const std::string& value = all.elements[i + 1].str;
    if (field == "mode" && (value == "read" || value == "write")) {
      p.mode = value;
      continue;
    }
    long long count = 0;
    const bool owner = (is_owner_field(field) ||
                        (field.size() > 6 && field.ends_with(":write") &&
                         is_owner_field(field.substr(0, field.size() - 6)))) &&
                       is_integer(value, &count) && count >= 1;
    if (!owner) {
      owners_only = false;
      if (first_odd.empty()) first_odd = field;
    }
  }
  if (!owners_only) {
    p.family = LockFamily::not_a_lock;
    p.description = "a hash whose field '" + first_odd + "' is not a lock owner" +
                    (first_odd == "rate" || first_odd == "interval"
                         ? " (a " + std::string(kind_name(Kind::rate_limiter)) + ")"
                         : "");
    return p;
  }
  if (!p.mode.empty()) {
    p.family = LockFamily::read_write;
  } else if (has_queue) {
    p.family = LockFamily::fair;
  } else if (key_type(client, "redisson_lock_token:" + tag) == "string") {
    p.family = LockFamily::fenced;
  } else {
    p.family = LockFamily::lock;
  }
  return p;
}

}  // namespace redisync::cli
