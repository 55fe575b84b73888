// SPDX-License-Identifier: Apache-2.0
#include "log_line.h"

#include <iostream>

namespace redisync::detail {

void log_line(const Config& config, std::string_view line) noexcept {
  try {
    if (config.log) {
      config.log(line);
    } else {
      std::cerr << "redisync: " << line << "\n";
    }
  } catch (...) {
    // A diagnostic must never take down its caller (often the I/O thread).
  }
}

}  // namespace redisync::detail
