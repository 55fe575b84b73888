// SPDX-License-Identifier: Apache-2.0
#include "run_separator_hint.h"

#include <algorithm>

namespace redisync::cli {

namespace {

// The option `word` names among `run`'s (its "=value" part dropped), or null.
const CLI::Option* run_option(const CLI::App& run, const std::string& word) {
  const std::string name = word.substr(0, word.find('='));
  return run.get_option_no_throw(name);
}

}  // namespace

std::vector<std::string> with_run_separator(const CLI::App& run, std::vector<std::string> words) {
  if (words.empty() || words.front() != "run") return words;
  if (std::find(words.begin(), words.end(), "--") != words.end()) return words;
  int positionals = 0;
  for (std::size_t i = 1; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word.size() > 1 && word[0] == '-') {
      const CLI::Option* option = run_option(run, word);
      const int values = option == nullptr ? 0 : option->get_items_expected_max();
      if (values == 0) continue;          // a flag, or not one of run's (the parser says so)
      if (values > 1) return words;       // --multi: its names end at "--"
      if (word.find('=') == std::string::npos) ++i;  // its value is the next word
      continue;
    }
    if (++positionals == 2) {
      words.insert(words.begin() + static_cast<std::ptrdiff_t>(i), "--");
      return words;
    }
  }
  return words;
}

std::string run_separator_hint(const std::vector<std::string>& words,
                               const CLI::ParseError& error) {
  const bool is_run = !words.empty() && words.front() == "run";
  const bool has_separator = std::find(words.begin(), words.end(), "--") != words.end();
  if (!is_run || has_separator || dynamic_cast<const CLI::ExtrasError*>(&error) == nullptr) {
    return "";
  }
  return "the command's own options must follow '--': "
         "redisync run [options] --multi NAME... -- CMD --its-options";
}

}  // namespace redisync::cli
