// SPDX-License-Identifier: Apache-2.0
// Live progress of `redisync demo` on stderr: a redrawn bar on a terminal (~5 times a second),
// one plain line per second otherwise (logs, CI).
#pragma once

#include <cstdint>
#include <deque>
#include <iosfwd>
#include <string>
#include <utility>

namespace redisync::cli {

class Progress {
 public:
  /// `total_seconds`: the length of the run, for the bar.
  Progress(std::ostream& out, bool tty, double total_seconds);

  /// Reports `sections` done after `elapsed` seconds; redraws when due.
  void update(double elapsed, long long sections);
  /// Prints a message on its own line (above the bar on a terminal).
  void note(const std::string& line);
  /// Ends the bar's line.
  void finish();

 private:
  void draw(double elapsed, long long sections);
  double rate() const;

  std::ostream& out_;
  bool tty_;
  double total_;
  double last_draw_ = -1e9;
  bool bar_visible_ = false;
  double last_elapsed_ = 0;
  long long last_sections_ = 0;
  std::deque<std::pair<double, long long>> samples_;  // the last second, for sections/s
};

}  // namespace redisync::cli
