// SPDX-License-Identifier: Apache-2.0
// `--metrics-port [HOST:]PORT` for commands that hold locks (redisync run): serves the
// Client's metrics in Prometheus' format at http://HOST:PORT/metrics while the command runs.
// Needs a build with -DREDISYNC_PROMETHEUS=ON; otherwise the option is refused (exit 64).
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "redisync/config.h"

namespace redisync::cli {

/// Adds the option to `command`, bound to `listen` (empty: no metrics).
void add_metrics_option(CLI::App& command, std::string& listen);

struct MetricsServer;

/// With a non-empty `listen`: sets a Prometheus sink on `config` (null otherwise). Throws
/// UsageError for a bad address or a build without the exporter.
std::shared_ptr<MetricsServer> metrics_sink(const std::string& listen, Config& config);

/// Starts serving the sink (no-op for null) until the handle is destroyed. Call it once the
/// command's signals are blocked: the server's threads inherit the signal mask. Throws
/// CliError (69) when it cannot listen.
void serve_metrics(const std::shared_ptr<MetricsServer>& server);

}  // namespace redisync::cli
