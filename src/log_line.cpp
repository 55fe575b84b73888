// SPDX-License-Identifier: Apache-2.0
#include "log_line.h"

#include <iostream>

namespace redisync::detail {

namespace {
thread_local const Config* thread_config = nullptr;
}  // namespace

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

const Config* set_thread_log_config(const Config* config) noexcept {
  const Config* previous = thread_config;
  thread_config = config;
  return previous;
}

void log_line_on_this_thread(std::string_view line) noexcept {
  static const Config no_hook;
  log_line(thread_config ? *thread_config : no_hook, line);
}

}  // namespace redisync::detail
