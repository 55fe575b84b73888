// SPDX-License-Identifier: Apache-2.0
#include "kinds.h"

#include <array>

#include "cli_error.h"

namespace redisync::cli {
namespace {

using Aliases = std::span<const std::string_view>;

// Spellings of earlier releases: `run`'s flags, `demo --kind`, `ls` and `status` output.
constexpr std::string_view kFairAliases[] = {"fair"};
constexpr std::string_view kFencedAliases[] = {"fenced"};
constexpr std::string_view kReadWriteAliases[] = {"rwlock", "read-write", "rw"};
constexpr std::string_view kReadAliases[] = {"read"};
constexpr std::string_view kWriteAliases[] = {"write"};
constexpr std::string_view kSpinAliases[] = {"spin"};
constexpr std::string_view kPermitAliases[] = {"expirable-semaphore", "permit-semaphore"};
constexpr std::string_view kLatchAliases[] = {"latch"};

constexpr std::array<KindInfo, 15> kKinds{{
    {Kind::lock, "lock", "lock", "lock", {}, "reentrant lock (Redisson RLock)"},
    {Kind::spin_lock, "spin-lock", "spin lock", "spin_lock", kSpinAliases,
     "lock that polls instead of subscribing (RSpinLock); a lock's layout"},
    {Kind::fair_lock, "fair-lock", "fair lock", "fair_lock", kFairAliases,
     "lock granted in request order (RFairLock)"},
    {Kind::non_reentrant_lock,
     "non-reentrant-lock",
     "non-reentrant lock",
     "non-reentrant_lock",
     {},
     "lock its holder cannot take twice; a lock's layout"},
    {Kind::non_reentrant_fair_lock,
     "non-reentrant-fair-lock",
     "non-reentrant fair lock",
     "non-reentrant_fair_lock",
     {},
     "fair lock its holder cannot take twice"},
    {Kind::fenced_lock, "fenced-lock", "fenced lock", "fenced_lock", kFencedAliases,
     "lock with a fencing token (RFencedLock)"},
    {Kind::read_write_lock, "read-write-lock", "read-write lock", "", kReadWriteAliases,
     "shared readers or one writer (RReadWriteLock)"},
    {Kind::read_lock, "read-lock", "read lock", "read_lock", kReadAliases,
     "the shared side of a read-write-lock"},
    {Kind::write_lock, "write-lock", "write lock", "write_lock", kWriteAliases,
     "the exclusive side of a read-write-lock"},
    {Kind::multi_lock,
     "multi-lock",
     "multi-lock",
     "multi_lock",
     {},
     "several locks taken together (client side only)"},
    {Kind::red_lock,
     "red-lock",
     "red lock",
     "red_lock",
     {},
     "a majority of independent locks (client side only)"},
    {Kind::semaphore, "semaphore", "semaphore", "semaphore", {}, "counting semaphore (RSemaphore)"},
    {Kind::permit_expirable_semaphore, "permit-expirable-semaphore", "permit-expirable semaphore",
     "permit_expirable_semaphore", kPermitAliases,
     "semaphore whose permits have ids and leases (RPermitExpirableSemaphore)"},
    {Kind::count_down_latch, "count-down-latch", "count-down latch", "count_down_latch",
     kLatchAliases, "opens when its count reaches zero (RCountDownLatch)"},
    {Kind::rate_limiter,
     "rate-limiter",
     "rate limiter",
     "rate_limiter",
     {},
     "permits per interval (RRateLimiter)"},
}};

// The table is indexed by the enum: a row out of place is a compile error.
constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < kKinds.size(); ++i) {
    if (static_cast<std::size_t>(kKinds[i].kind) != i) return false;
  }
  return true;
}
static_assert(in_enum_order());
static_assert(kKinds.back().kind == Kind::rate_limiter);

}  // namespace

std::span<const KindInfo> all_kinds() { return kKinds; }

const KindInfo& kind_info(Kind kind) { return kKinds[static_cast<std::size_t>(kind)]; }

std::optional<Kind> parse_kind(std::string_view text) {
  for (const auto& k : kKinds) {
    if (k.name == text) return k.kind;
    for (auto alias : k.aliases) {
      if (alias == text) return k.kind;
    }
  }
  return std::nullopt;
}

std::optional<Kind> kind_of_metrics_label(std::string_view label) {
  for (const auto& k : kKinds) {
    if (!k.metrics_label.empty() && k.metrics_label == label) return k.kind;
  }
  return std::nullopt;
}

std::string kind_list(std::span<const Kind> kinds) {
  std::string text;
  for (Kind k : kinds) {
    if (!text.empty()) text += ", ";
    text += kind_name(k);
  }
  return text;
}

Kind parse_kind_option(std::string_view text, std::span<const Kind> accepted,
                       std::string_view option) {
  const auto kind = parse_kind(text);
  for (Kind k : accepted) {
    if (kind == k) return k;
  }
  const std::string choices = " (one of: " + kind_list(accepted) + ")";
  if (!kind) {
    throw UsageError(std::string(option) + ": unknown kind '" + std::string(text) + "'" + choices);
  }
  throw UsageError(std::string(option) + ": " + std::string(kind_name(*kind)) +
                   " is not taken here" + choices);
}

bool KindVerdict::may_be(Kind kind) const {
  for (Kind k : candidates) {
    if (k == kind) return true;
  }
  return false;
}

std::string KindVerdict::label(std::string_view no_kind) const {
  if (candidates.empty()) return std::string(no_kind);
  if (ambiguous()) return std::string(kAmbiguous);
  return std::string(kind_name(candidates.front()));
}

std::string KindVerdict::candidate_text() const {
  std::string text;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (i > 0) text += i + 1 == candidates.size() ? " or " : ", ";
    text += kind_name(candidates[i]);
  }
  return text;
}

}  // namespace redisync::cli
