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

std::string name_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

void write_name_fields(JsonWriter& w, std::string_view name) {
  if (is_utf8(name)) w.field("name", name);
  w.field("name_hex", name_hex(name));
}

void add_name_options(CLI::App& command, std::string& name, std::optional<std::string>& hex) {
  command.add_option("name", name, "The name (or give its bytes with --name-hex)");
  command
      .add_option("--name-hex", hex,
                  "The name's bytes in hex, two digits a byte, as `ls --json` gives them in "
                  "name_hex (any bytes: 0xFF, NUL, newlines)")
      ->type_name("HEX");
}

std::string given_name(const std::string& name, const std::optional<std::string>& given_hex,
                       const std::string& command) {
  if (!name.empty() && given_hex) {
    throw UsageError(command + ": give the name once, as NAME or as --name-hex HEX");
  }
  if (!given_hex) {
    check_name(name, command);
    return name;
  }
  const std::string& hex = *given_hex;
  if (hex.empty()) throw UsageError(command + ": --name-hex must not be empty");
  const auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    const int hi = digit(hex[i]);
    const int lo = digit(hex[i + 1]);
    if (hi < 0 || lo < 0) break;
    bytes += static_cast<char>(hi * 16 + lo);
  }
  if (hex.size() % 2 != 0 || bytes.size() * 2 != hex.size()) {
    throw UsageError(command + ": --name-hex '" + printable(hex) +
                     "' is not hex: two digits 0-9a-f a byte (as ls --json's name_hex)");
  }
  return bytes;
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
