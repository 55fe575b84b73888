// SPDX-License-Identifier: Apache-2.0
#include "net/reply.h"

#include <hiredis/hiredis.h>

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

Reply convert_reply(const redisReply* r) {
  Reply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
      out.kind = r->type == REDIS_REPLY_STRING   ? Reply::Kind::string
                 : r->type == REDIS_REPLY_STATUS ? Reply::Kind::status
                                                 : Reply::Kind::error;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.kind = Reply::Kind::integer;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.kind = Reply::Kind::array;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(convert_reply(r->element[i]));
      break;
    default:
      out.kind = Reply::Kind::nil;
  }
  return out;
}

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
