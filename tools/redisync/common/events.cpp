// SPDX-License-Identifier: Apache-2.0
#include "events.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "cli_error.h"

namespace redisync::cli {

std::string format_section(const SectionTimes& s) {
  return std::to_string(s.t0) + " " + std::to_string(s.t1) + " " + std::to_string(s.t2) + " " +
         std::to_string(s.t3) + "\n";
}

void write_sections(const std::string& path, const std::vector<SectionTimes>& sections) {
  std::string text;
  text.reserve(sections.size() * 80);
  for (const auto& s : sections) text += format_section(s);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) throw CliError(kExitFailure, "cannot write events file " + path);
}

std::vector<SectionTimes> read_sections(const std::string& path) {
  std::vector<SectionTimes> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    SectionTimes s;
    std::string extra;
    if (fields >> s.t0 >> s.t1 >> s.t2 >> s.t3 && !(fields >> extra)) out.push_back(s);
  }
  return out;
}

SectionLog::SectionLog(const std::string& path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw CliError(kExitFailure, "cannot open events file " + path + ": " + std::strerror(errno));
  }
}

SectionLog::~SectionLog() { ::close(fd_); }

void SectionLog::append(const SectionTimes& s) {
  const std::string line = format_section(s);
  // One write of a short line to an O_APPEND file: all or nothing in practice.
  while (::write(fd_, line.data(), line.size()) < 0 && errno == EINTR) {
  }
}

}  // namespace redisync::cli
