// SPDX-License-Identifier: Apache-2.0
// Event files of the contention benchmark and the demo: one line per completed critical
// section, "t0 t1 t2 t3" in CLOCK_MONOTONIC ns: acquire called, acquire returned, release
// called, release returned.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace redisync::cli {

struct SectionTimes {
  std::int64_t t0 = 0;  ///< acquire called
  std::int64_t t1 = 0;  ///< acquire returned (lock held)
  std::int64_t t2 = 0;  ///< release called
  std::int64_t t3 = 0;  ///< release returned
};

/// "t0 t1 t2 t3\n"
std::string format_section(const SectionTimes& s);

/// Writes all sections to `path` (truncating it). Throws CliError if it cannot.
void write_sections(const std::string& path, const std::vector<SectionTimes>& sections);

/// Reads an event file; a missing file is empty; malformed lines (a torn last line) are
/// skipped.
std::vector<SectionTimes> read_sections(const std::string& path);

/// Appends one line per section as it completes, with one write(2) each, so the lines of a
/// process killed later are all on disk.
class SectionLog {
 public:
  /// Throws CliError if `path` cannot be opened.
  explicit SectionLog(const std::string& path);
  ~SectionLog();
  SectionLog(const SectionLog&) = delete;
  SectionLog& operator=(const SectionLog&) = delete;
  void append(const SectionTimes& s);

 private:
  int fd_ = -1;
};

}  // namespace redisync::cli
