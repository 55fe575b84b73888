// SPDX-License-Identifier: Apache-2.0
// The one vocabulary of kinds: every command's output (ls, status, unlock, run -v, demo, the
// metrics labels, --json) and every kind it accepts (run --kind, demo --kind) is read from the
// table in kinds.cpp. Each name is the library's class in kebab-case.
#pragma once

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace redisync::cli {

enum class Kind {
  lock,
  spin_lock,
  fair_lock,
  non_reentrant_lock,
  non_reentrant_fair_lock,
  fenced_lock,
  read_write_lock,
  read_lock,   ///< the shared side of a read-write-lock
  write_lock,  ///< the exclusive side of a read-write-lock
  multi_lock,
  red_lock,
  semaphore,
  permit_expirable_semaphore,
  count_down_latch,
  rate_limiter,
};

struct KindInfo {
  Kind kind;
  std::string_view name;           ///< what the CLI prints and accepts: "fair-lock"
  std::string_view noun;           ///< in sentences: "fair lock"
  std::string_view metrics_label;  ///< the library's MetricLabels::kind: "fair_lock"
  /// Older spellings still accepted where a kind is given (run --kind, demo --kind); never
  /// printed.
  std::span<const std::string_view> aliases;
  std::string_view about;  ///< one line for --help and the README
};

/// Every kind, in the order of the enum.
std::span<const KindInfo> all_kinds();
const KindInfo& kind_info(Kind kind);
inline std::string_view kind_name(Kind kind) { return kind_info(kind).name; }
inline std::string_view kind_noun(Kind kind) { return kind_info(kind).noun; }

/// The kind named `text` (its name or one of its aliases); nullopt if none.
std::optional<Kind> parse_kind(std::string_view text);
/// The kind whose library metrics label is `label` ("fair_lock"); nullopt for the labels that
/// are no kind ("watchdog", "channel").
std::optional<Kind> kind_of_metrics_label(std::string_view label);

/// `kinds` as "lock, fair-lock, ...".
std::string kind_list(std::span<const Kind> kinds);

/// Parses a --kind value among `accepted` (names or aliases). Throws UsageError
/// "<option>: unknown kind 'x' (one of: ...)" for a name no kind has, "<option>: <kind> is not
/// taken here (one of: ...)" for a kind the command does not take.
Kind parse_kind_option(std::string_view text, std::span<const Kind> accepted,
                       std::string_view option);

/// What the keys under a name prove (`status`, `ls`): one kind, or several that the keys
/// cannot tell apart (ambiguous), or none.
struct KindVerdict {
  std::vector<Kind> candidates;

  KindVerdict() = default;
  KindVerdict(Kind kind) : candidates{kind} {}  // implicit: a proven kind
  KindVerdict(std::initializer_list<Kind> kinds) : candidates(kinds) {}

  bool proven() const { return candidates.size() == 1; }
  bool ambiguous() const { return candidates.size() > 1; }
  /// Proven to be `kind`.
  bool is(Kind kind) const { return proven() && candidates.front() == kind; }
  /// `kind` is one of the candidates.
  bool may_be(Kind kind) const;
  /// The proven kind's name, kAmbiguous for several, `no_kind` for none.
  std::string label(std::string_view no_kind) const;
  /// The candidates' names: "lock or fair-lock".
  std::string candidate_text() const;
};

/// What `status` and `ls` say when the keys prove no single kind. Not kinds: answers.
inline constexpr std::string_view kNoKind = "none";          ///< nothing under the name
inline constexpr std::string_view kAmbiguous = "ambiguous";  ///< several kinds fit the keys
inline constexpr std::string_view kOtherData = "other";      ///< no kind's layout

}  // namespace redisync::cli
