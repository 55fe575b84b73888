// SPDX-License-Identifier: Apache-2.0
#include "duration.h"

#include <array>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "cli_error.h"
#include "names.h"

namespace redisync::cli {
namespace {

struct Unit {
  std::string_view name;
  std::uint64_t ms;
};

// Largest first: a compound duration names them in this order, each at most once.
constexpr std::array<Unit, 4> kUnits{{{"h", 3'600'000}, {"m", 60'000}, {"s", 1000}, {"ms", 1}}};

constexpr auto kMaxMs = static_cast<std::uint64_t>(max_duration.count());
constexpr std::size_t kMaxFractionDigits = 9;  // keeps fraction * unit within 64 bits

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

std::string_view take_while(std::string_view text, std::size_t& pos, bool (*pred)(char)) {
  const std::size_t start = pos;
  while (pos < text.size() && pred(text[pos])) ++pos;
  return text.substr(start, pos - start);
}

// Reads `text` left to right; every refusal is a UsageError "FLAG TEXT: why".
class DurationReader {
 public:
  DurationReader(std::string_view text, const std::string& flag)
      : text_(text), flag_(flag), shown_(text.empty() ? "''" : printable(text)) {}

  Duration read() {
    if (text_.empty()) refuse("empty duration (give e.g. 30s or 250ms)");
    if (text_ == "0") return Duration{0};
    if (text_.front() == '-') refuse("must not be negative");
    std::uint64_t total = 0;
    while (pos_ < text_.size()) total += read_part();
    if (total > kMaxMs) refuse(too_large());
    return Duration(static_cast<Duration::rep>(total));
  }

 private:
  // One NUMBER UNIT, in milliseconds (at most kMaxMs + a fraction of an hour).
  std::uint64_t read_part() {
    const std::size_t start = pos_;
    const std::string_view whole = take_while(text_, pos_, is_digit);
    std::string_view fraction;
    bool has_point = false;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      has_point = true;
      ++pos_;
      fraction = take_while(text_, pos_, is_digit);
    }
    if (whole.empty() || (has_point && fraction.empty())) refuse(not_a_duration());
    const std::string number(text_.substr(start, pos_ - start));
    const std::string_view unit_name = take_while(text_, pos_, is_letter);
    if (unit_name.empty()) {
      if (pos_ < text_.size()) refuse(not_a_duration());
      if (start == 0) {
        refuse("give a unit, e.g. " + number + "s" + (has_point ? "" : " or " + number + "ms"));
      }
      refuse("give " + number + " a unit, e.g. " + std::string(text_) + "s");
    }
    return in_ms(whole, fraction, unit(unit_name));
  }

  const Unit& unit(std::string_view name) {
    for (std::size_t i = 0; i < kUnits.size(); ++i) {
      if (kUnits[i].name != name) continue;
      if (i < next_unit_) {
        refuse("give each unit at most once, from largest to smallest (e.g. 1h2m3.5s)");
      }
      next_unit_ = i + 1;
      return kUnits[i];
    }
    refuse("unknown unit '" + printable(name) + "' (use h, m, s or ms)");
  }

  std::uint64_t in_ms(std::string_view whole, std::string_view fraction, const Unit& u) {
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(whole.data(), whole.data() + whole.size(), n);
    if (ec != std::errc() || end != whole.data() + whole.size() || n > kMaxMs / u.ms) {
      refuse(too_large());
    }
    while (!fraction.empty() && fraction.back() == '0') fraction.remove_suffix(1);
    if (fraction.empty()) return n * u.ms;
    if (fraction.size() > kMaxFractionDigits) refuse(not_whole_ms());
    std::uint64_t digits = 0;
    std::uint64_t scale = 1;
    for (const char c : fraction) {
      digits = digits * 10 + static_cast<std::uint64_t>(c - '0');
      scale *= 10;
    }
    if (digits * u.ms % scale != 0) refuse(not_whole_ms());
    return n * u.ms + digits * u.ms / scale;
  }

  std::string not_a_duration() const {
    return "not a duration (expected e.g. 250ms, 1.5s, 2m, 1h or 1m30s)";
  }
  std::string too_large() const { return "too large (at most 277777h, about 31 years)"; }
  std::string not_whole_ms() const { return "not a whole number of milliseconds"; }

  [[noreturn]] void refuse(const std::string& why) const {
    throw UsageError(flag_ + " " + shown_ + ": " + why);
  }

  std::string_view text_;
  const std::string& flag_;
  std::string shown_;
  std::size_t pos_ = 0;
  std::size_t next_unit_ = 0;  // index in kUnits of the largest unit still allowed
};

}  // namespace

Duration parse_duration_flag(const std::string& text, const std::string& flag) {
  return DurationReader(text, flag).read();
}

std::string format_duration(Duration d) {
  const long long ms = d.count();
  if (ms < 1000 || ms % 100 != 0) return std::to_string(ms) + " ms";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

}  // namespace redisync::cli
