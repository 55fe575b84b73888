#include "net/reply.h"

#include <charconv>

namespace redisync {

std::string Reply::to_string() const {
  switch (kind) {
    case Kind::nil: return "(nil)";
    case Kind::string: return "\"" + str + "\"";
    case Kind::status: return str;
    case Kind::error: return "(error) " + str;
    case Kind::integer: return std::to_string(integer);
    case Kind::array: {
      std::string s = "[";
      for (size_t i = 0; i < elements.size(); ++i) {
        if (i) s += ", ";
        s += elements[i].to_string();
      }
      return s + "]";
    }
  }
  return "?";
}

namespace net {

void encode_command(std::string& out, const std::vector<std::string>& args) {
  // Sized once: appended piece by piece, the buffer of a script call grew (and moved) about
  // ten times per command.
  std::size_t size = 16;  // "*<count>\r\n"
  for (const auto& a : args) size += a.size() + 16;  // "$<length>\r\n" a "\r\n"
  out.reserve(out.size() + size);
  char digits[24];
  const auto append_number = [&](char prefix, std::size_t n) {
    out += prefix;
    const auto end = std::to_chars(digits, digits + sizeof digits, n).ptr;
    out.append(digits, end);
    out += "\r\n";
  };
  append_number('*', args.size());
  for (const auto& a : args) {
    append_number('$', a.size());
    out += a;
    out += "\r\n";
  }
}

}  // namespace net
}  // namespace redisync
