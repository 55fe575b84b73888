// SPDX-License-Identifier: Apache-2.0
// The CLI's metrics speak its kind vocabulary (kinds.h): a sink in front of the exporter that
// renames the library's kind labels ("fair_lock") to the CLI's names ("fair-lock"). Labels
// that name no kind ("watchdog", "channel") pass unchanged.
#pragma once

#include <memory>

#include "redisync/metrics.h"

namespace redisync::cli {

/// A Metrics sink forwarding every event to `next` with its kind label renamed.
std::shared_ptr<Metrics> with_cli_kind_labels(std::shared_ptr<Metrics> next);

}  // namespace redisync::cli
