// SPDX-License-Identifier: Apache-2.0
#include "names.h"

#include "cli_error.h"

namespace redisync::cli {

void check_name(const std::string& name, const std::string& command, const std::string& what) {
  if (name.empty()) {
    throw UsageError(command + ": " + what +
                     " must not be empty (Redis has no key of that name to lock or inspect)");
  }
}

std::string printable(std::string_view text, bool keep_newlines) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  const auto hex = [&out](unsigned char b) {
    out += "\\x";
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto b = static_cast<unsigned char>(text[i]);
    if (b == '\\') {
      out += "\\\\";
    } else if (b == '\n') {
      out += keep_newlines ? "\n" : "\\n";
    } else if (b == '\t') {
      out += "\\t";
    } else if (b == '\r') {
      out += "\\r";
    } else if (b < 0x20 || b == 0x7f) {
      hex(b);
    } else if (b == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      hex(b);  // U+0080..U+009F: C1 controls (CSI is U+009B)
      hex(static_cast<unsigned char>(text[++i]));
    } else {
      out += text[i];
    }
  }
  return out;
}

std::string printable_word(std::string_view text) {
  const std::string escaped = printable(text);
  std::string out;
  out.reserve(escaped.size());
  for (char c : escaped) {
    if (c == ' ') {
      out += "\\x20";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace redisync::cli
