// SPDX-License-Identifier: Apache-2.0
// Fuzz target: Config::from_url, Config::validate, Config::describe and parse_duration.
// Contract checked: any text either parses or throws ConfigError (nothing else, no crash);
// a parsed Config describes itself and validates without throwing anything but ConfigError.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "redisync/config.h"
#include "redisync/errors.h"

namespace {

[[noreturn]] void fail(const std::string& input, const char* what) {
  std::fprintf(stderr, "config_url_fuzz: unexpected exception for input of %zu bytes: %s\n",
               input.size(), what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  try {
    const redisync::Config config = redisync::Config::from_url(input);
    (void)config.describe();
    config.validate();
  } catch (const redisync::ConfigError&) {
    // the documented failure
  } catch (const std::exception& e) {
    fail(input, e.what());
  }
  try {
    (void)redisync::parse_duration(input, "fuzz");
  } catch (const redisync::ConfigError&) {
  } catch (const std::exception& e) {
    fail(input, e.what());
  }
  return 0;
}
