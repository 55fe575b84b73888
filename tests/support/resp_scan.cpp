// SPDX-License-Identifier: Apache-2.0
#include "support/resp_scan.h"

#include <charconv>

namespace redisync::test {

namespace {

constexpr int kMaxDepth = 32;
constexpr long kMaxLength = 512L * 1024 * 1024;  // a server's proto-max-bulk-len default

// The line starting at `pos` (without CRLF); npos-like -1 in *end when incomplete.
bool read_line(std::string_view buf, size_t pos, std::string_view* line, size_t* next) {
  const size_t cr = buf.find("\r\n", pos);
  if (cr == std::string_view::npos) return false;
  *line = buf.substr(pos, cr - pos);
  *next = cr + 2;
  return true;
}

bool to_long(std::string_view text, long* out) {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// Scans one frame at `pos`: 1 complete (sets *next), 0 incomplete, -1 malformed.
int scan(std::string_view buf, size_t pos, int depth, size_t* next) {
  if (pos >= buf.size()) return 0;
  if (depth > kMaxDepth) return -1;
  const char type = buf[pos];
  std::string_view line;
  size_t after = 0;
  if (!read_line(buf, pos + 1, &line, &after)) {
    return buf.size() - pos > 64 * 1024 ? -1 : 0;  // a header line is short
  }
  switch (type) {
    case '+':
    case '-':
    case ':':
      *next = after;
      return 1;
    case '$': {
      long n = 0;
      if (!to_long(line, &n) || n < -1 || n > kMaxLength) return -1;
      if (n == -1) {
        *next = after;
        return 1;
      }
      const size_t end = after + static_cast<size_t>(n) + 2;
      if (buf.size() < end) return 0;
      if (buf.substr(end - 2, 2) != "\r\n") return -1;
      *next = end;
      return 1;
    }
    case '*': {
      long n = 0;
      if (!to_long(line, &n) || n < -1 || n > 1024L * 1024) return -1;
      size_t at = after;
      for (long i = 0; i < n; ++i) {
        const int r = scan(buf, at, depth + 1, &at);
        if (r <= 0) return r;
      }
      *next = at;
      return 1;
    }
    default:
      return -1;
  }
}

}  // namespace

long resp_frame_length(std::string_view buf) {
  if (buf.empty()) return 0;
  const char type = buf[0];
  if (type != '+' && type != '-' && type != ':' && type != '$' && type != '*') {
    const size_t nl = buf.find('\n');  // inline command
    if (nl == std::string_view::npos) return buf.size() > 64 * 1024 ? -1 : 0;
    return static_cast<long>(nl + 1);
  }
  size_t next = 0;
  const int r = scan(buf, 0, 0, &next);
  return r < 0 ? -1 : r == 0 ? 0 : static_cast<long>(next);
}

bool resp_request_args(std::string_view frame, std::vector<std::string>* args) {
  args->clear();
  if (frame.empty()) return false;
  if (frame[0] != '*') {
    if (frame[0] == '+' || frame[0] == '-' || frame[0] == ':' || frame[0] == '$') return false;
    std::string_view line = frame;
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    size_t pos = 0;
    while (pos < line.size()) {
      const size_t start = line.find_first_not_of(" \t", pos);
      if (start == std::string_view::npos) break;
      const size_t end = line.find_first_of(" \t", start);
      args->emplace_back(line.substr(start, end == std::string_view::npos ? end : end - start));
      pos = end == std::string_view::npos ? line.size() : end;
    }
    return !args->empty();
  }
  std::string_view line;
  size_t at = 0;
  long n = 0;
  if (!read_line(frame, 1, &line, &at) || !to_long(line, &n) || n < 1) return false;
  for (long i = 0; i < n; ++i) {
    long len = 0;
    if (at >= frame.size() || frame[at] != '$') return false;
    if (!read_line(frame, at + 1, &line, &at) || !to_long(line, &len) || len < 0) return false;
    if (frame.size() < at + static_cast<size_t>(len) + 2) return false;
    args->emplace_back(frame.substr(at, static_cast<size_t>(len)));
    at += static_cast<size_t>(len) + 2;
  }
  return true;
}

}  // namespace redisync::test
