#include "net/reply.h"

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
  out += '*';
  out += std::to_string(args.size());
  out += "\r\n";
  for (const auto& a : args) {
    out += '$';
    out += std::to_string(a.size());
    out += "\r\n";
    out += a;
    out += "\r\n";
  }
}

}  // namespace net
}  // namespace redisync
