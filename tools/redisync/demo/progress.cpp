// SPDX-License-Identifier: Apache-2.0
#include "progress.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

namespace redisync::cli {
namespace {

constexpr int kBarWidth = 30;

}  // namespace

Progress::Progress(std::ostream& out, bool tty, double total_seconds)
    : out_(out), tty_(tty), total_(total_seconds) {}

double Progress::rate() const {
  if (samples_.size() < 2) return 0;
  const auto& [t0, s0] = samples_.front();
  const auto& [t1, s1] = samples_.back();
  return t1 > t0 ? static_cast<double>(s1 - s0) / (t1 - t0) : 0;
}

void Progress::update(double elapsed, long long sections) {
  samples_.emplace_back(elapsed, sections);
  while (samples_.size() > 2 && elapsed - samples_.front().first > 1.0) samples_.pop_front();
  last_elapsed_ = elapsed;
  last_sections_ = sections;
  const double interval = tty_ ? 0.2 : 1.0;
  if (elapsed - last_draw_ >= interval - 1e-3) {
    last_draw_ = elapsed;
    draw(elapsed, sections);
  }
}

void Progress::draw(double elapsed, long long sections) {
  char text[160];
  const double shown = std::clamp(elapsed, 0.0, total_);
  if (tty_) {
    const int filled = total_ > 0 ? static_cast<int>(kBarWidth * shown / total_) : kBarWidth;
    const std::string bar = std::string(static_cast<std::size_t>(filled), '#') +
                            std::string(static_cast<std::size_t>(kBarWidth - filled), '.');
    std::snprintf(text, sizeof text, "\r  [%s] %5.1f/%.1f s  %7lld sections  %6.0f/s\x1b[K",
                  bar.c_str(), shown, total_, sections, rate());
    out_ << text << std::flush;
    bar_visible_ = true;
  } else {
    std::snprintf(text, sizeof text, "  %5.1f/%.1f s  %7lld sections  %6.0f/s\n", shown, total_,
                  sections, rate());
    out_ << text << std::flush;
  }
}

void Progress::note(const std::string& line) {
  if (tty_ && bar_visible_) out_ << "\r\x1b[K";
  out_ << "  " << line << "\n";
  if (tty_ && bar_visible_) draw(last_elapsed_, last_sections_);
  out_ << std::flush;
}

void Progress::finish() {
  if (tty_ && bar_visible_) {
    draw(last_elapsed_, last_sections_);
    out_ << "\n" << std::flush;
  } else if (!tty_ && last_draw_ < last_elapsed_) {
    draw(last_elapsed_, last_sections_);  // the final state, even if a line is not yet due
  }
  bar_visible_ = false;
}

}  // namespace redisync::cli
