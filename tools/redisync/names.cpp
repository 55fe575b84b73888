#include "names.h"

#include "cli_error.h"

namespace redisync::cli {

void check_name(const std::string& name, const std::string& command, const std::string& what) {
  if (name.empty()) {
    throw UsageError(command + ": " + what +
                     " must not be empty (Redis has no key of that name to lock or inspect)");
  }
}

}  // namespace redisync::cli
