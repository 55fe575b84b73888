// SPDX-License-Identifier: Apache-2.0
#include "redis_option.h"

#include "cli_error.h"
#include "redisync/errors.h"

namespace redisync::cli {

CLI::Option* add_redis_option(CLI::App& app, std::string& url) {
  url = kDefaultRedisUrl;
  return app
      .add_option("--redis", url,
                  "Redis URL: redis://[[user]:password@]host[:port][/db], rediss://..., "
                  "unix:///path.sock (default: $REDISYNC_URL, then " +
                      std::string(kDefaultRedisUrl) + ")")
      ->envname(kRedisUrlEnv);
}

Config config_from_url(const std::string& url) {
  try {
    return Config::from_url(url);
  } catch (const ConfigError& e) {
    std::string why = e.what();
    const std::string prefix = "redisync config: ";
    if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
    throw UsageError("invalid --redis URL: " + why);
  }
}

std::string hash_tag(const std::string& name) {
  return name.find('{') == std::string::npos ? "{" + name + "}" : name;
}

}  // namespace redisync::cli
