// SPDX-License-Identifier: Apache-2.0
#include "run_separator_hint.h"

#include <algorithm>

namespace redisync::cli {

std::string run_separator_hint(const std::vector<std::string>& words,
                               const CLI::ParseError& error) {
  const bool is_run = !words.empty() && words.front() == "run";
  const bool has_separator = std::find(words.begin(), words.end(), "--") != words.end();
  if (!is_run || has_separator || dynamic_cast<const CLI::ExtrasError*>(&error) == nullptr) {
    return "";
  }
  return "the command's own options must follow '--': "
         "redisync run [options] NAME -- CMD --its-options";
}

}  // namespace redisync::cli
