// SPDX-License-Identifier: Apache-2.0
// `redisync status` for a rate limiter (docs/wire-format.md §17): its configuration, and per window the
// permits available now and the grants made in the current interval. Read-only: it computes
// what the next acquire would see without removing expired grants.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "redisync/client.h"
#include "status_report.h"

namespace redisync::cli {

/// True when the hash fields are a rate limiter's (rate, interval and type present).
bool is_rate_limiter(const std::vector<std::pair<std::string, std::string>>& fields);

/// Fills r.rate_limiter from the configuration `fields` and the window keys (server time).
void inspect_rate_limiter(Client& client, const std::vector<std::pair<std::string, std::string>>& fields,
                          StatusReport& r);

/// Reads one window at server time `now_ms`: permits available and granted in the interval.
RateWindow read_rate_window(long long rate, long long interval_ms, long long now_ms,
                            const std::string& client_id, const Reply& value,
                            const Reply& grants_with_scores);

}  // namespace redisync::cli
