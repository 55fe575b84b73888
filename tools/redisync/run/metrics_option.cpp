// SPDX-License-Identifier: Apache-2.0
#include "metrics_option.h"

#include <charconv>

#include "cli_error.h"
#include "metrics_kind_labels.h"
#include "option_checks.h"
#include "redisync/errors.h"
#ifdef REDISYNC_HAVE_PROMETHEUS
#include "redisync/prometheus_metrics.h"
#endif

namespace redisync::cli {

struct MetricsServer {
  std::string address;
#ifdef REDISYNC_HAVE_PROMETHEUS
  std::shared_ptr<PrometheusMetrics> metrics = std::make_shared<PrometheusMetrics>();
#endif
};

void add_metrics_option(CLI::App& command, std::string& listen) {
  command
      .add_option("--metrics-port", listen,
                  "Serve Prometheus metrics (acquire waits, hold times, renewals...) at "
                  "http://[HOST:]PORT/metrics while the command runs; HOST defaults to "
                  "127.0.0.1")
      ->check(non_empty());
}

std::shared_ptr<MetricsServer> metrics_sink(const std::string& listen, Config& config) {
  if (listen.empty()) return nullptr;
  const auto colon = listen.rfind(':');
  const std::string host = colon == std::string::npos ? "127.0.0.1" : listen.substr(0, colon);
  const std::string port_text = colon == std::string::npos ? listen : listen.substr(colon + 1);
  int port = -1;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc{} || end != port_text.data() + port_text.size() || port < 1 ||
      port > 65535 || host.empty()) {
    throw UsageError("--metrics-port: expected [HOST:]PORT with PORT 1..65535 (got '" + listen +
                     "')");
  }
#ifdef REDISYNC_HAVE_PROMETHEUS
  auto server = std::make_shared<MetricsServer>();
  server->address = host + ":" + std::to_string(port);
  config.metrics = with_cli_kind_labels(server->metrics);  // metrics_kind_labels.h
  return server;
#else
  (void)config;
  throw UsageError("--metrics-port: this redisync was built without the Prometheus exporter "
                   "(configure with -DREDISYNC_PROMETHEUS=ON)");
#endif
}

void serve_metrics(const std::shared_ptr<MetricsServer>& server) {
  if (!server) return;
#ifdef REDISYNC_HAVE_PROMETHEUS
  try {
    server->metrics->serve(server->address);
  } catch (const Error& e) {
    throw CliError(kExitUnavailable, e.what());
  }
#endif
}

}  // namespace redisync::cli
