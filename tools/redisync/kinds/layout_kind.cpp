// SPDX-License-Identifier: Apache-2.0
#include "layout_kind.h"

#include "redis_option.h"
#include "server_numbers.h"
#include "status_rate_limiter.h"
#include "unlock_kinds.h"

namespace redisync::cli {
namespace {

// Every field an owner ("<id>:<thread>", a writer's with ":write") holding a count >= 1, or a
// read-write-lock's mode. Sets *mode when a mode field is there.
bool only_lock_fields(const std::vector<std::pair<std::string, std::string>>& fields,
                      bool* has_mode) {
  for (const auto& [field, value] : fields) {
    if (field == "mode" && (value == "read" || value == "write")) {
      *has_mode = true;
      continue;
    }
    const std::string base = field.ends_with(":write") ? field.substr(0, field.size() - 6) : field;
    const auto count = integer_text(value);
    if (!is_owner_field(base) || !count || *count < 1) return false;
  }
  return !fields.empty();
}

}  // namespace

LayoutFacts read_layout(Client& client, const std::string& name) {
  LayoutFacts f;
  f.type = key_type(client, name);
  const std::string tag = hash_tag(name);
  if (f.type == "hash") {
    const Reply all = client.execute({"HGETALL", name});
    for (std::size_t i = 0; i + 1 < all.elements.size(); i += 2) {
      f.fields.emplace_back(all.elements[i].str, all.elements[i + 1].str);
    }
  } else if (f.type == "string") {
    f.value = client.execute({"GET", name}).str;
    f.permit_timeouts = key_type(client, tag + ":timeout") == "zset";
  }
  if (f.type == "hash" || f.type == "none") {
    f.fair_queue = key_type(client, "redisson_lock_queue:" + tag) == "list" ||
                   key_type(client, "redisson_lock_timeout:" + tag) == "zset";
    f.fence_counter = key_type(client, "redisson_lock_token:" + tag) == "string";
  }
  return f;
}

KindVerdict kind_of_layout(const LayoutFacts& f) {
  if (f.type == "none") return f.fair_queue ? KindVerdict{Kind::fair_lock} : KindVerdict{};
  if (f.type == "hash") {
    if (is_rate_limiter(f.fields)) return Kind::rate_limiter;
    bool has_mode = false;
    if (!only_lock_fields(f.fields, &has_mode)) return {};  // a user's hash
    if (has_mode) return Kind::read_write_lock;
    if (f.fair_queue && f.fence_counter) return {Kind::fair_lock, Kind::fenced_lock};
    if (f.fair_queue) return Kind::fair_lock;
    if (f.fence_counter) return Kind::fenced_lock;
    return {Kind::lock, Kind::fair_lock};  // a fair lock's queue is gone once nobody waits
  }
  if (f.type == "string" && f.value && integer_text(*f.value)) {
    if (f.permit_timeouts) return Kind::permit_expirable_semaphore;
    return {Kind::semaphore, Kind::permit_expirable_semaphore, Kind::count_down_latch};
  }
  return {};
}

bool may_be_plain_data(const LayoutFacts& f) {
  return f.type == "string" && kind_of_layout(f).ambiguous();
}

}  // namespace redisync::cli
