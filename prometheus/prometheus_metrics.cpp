// SPDX-License-Identifier: Apache-2.0
#include "redisync/prometheus_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/exposer.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <array>
#include <exception>
#include <mutex>
#include <sstream>

#include "redisync/errors.h"

namespace redisync {

namespace {

constexpr std::array kCounters{Counter::acquires,         Counter::timeouts,   Counter::wake_ups,
                               Counter::renewals,         Counter::renewal_failures,
                               Counter::lost_locks,       Counter::subscriptions};
constexpr std::array kHistograms{Histogram::acquire_wait, Histogram::hold_time,
                                 Histogram::handoff_latency, Histogram::attempts_per_acquire};

const char* help(Counter c) {
  switch (c) {
    case Counter::acquires: return "Successful acquisitions.";
    case Counter::timeouts: return "Acquisitions that gave up when their wait ran out.";
    case Counter::wake_ups: return "Release messages that woke a waiter of this process.";
    case Counter::renewals: return "Lease renewals confirmed by the server.";
    case Counter::renewal_failures: return "Renewal calls that failed.";
    case Counter::lost_locks: return "Holds found lost by the watchdog.";
    case Counter::subscriptions: return "Channel subscriptions sent.";
  }
  return "";
}

const char* help(Histogram h) {
  switch (h) {
    case Histogram::acquire_wait: return "Time from the acquire call to the acquisition.";
    case Histogram::hold_time: return "Time from the acquisition to the release of the last hold.";
    case Histogram::handoff_latency:
      return "Time from the release message that woke a waiter to its acquisition.";
    case Histogram::attempts_per_acquire: return "Acquire steps run per successful acquisition.";
  }
  return "";
}

prometheus::Histogram::BucketBoundaries buckets(Histogram h) {
  if (h == Histogram::attempts_per_acquire) return {1, 2, 3, 5, 10, 20, 50, 100};
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
          0.1,    0.25,    0.5,    1,     2.5,    5,     10,   30,    60};
}

}  // namespace

struct PrometheusMetrics::Impl {
  Options options;
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::array<prometheus::Family<prometheus::Counter>*, kCounters.size()> counters{};
  std::array<prometheus::Family<prometheus::Histogram>*, kHistograms.size()> histograms{};
  std::mutex exposer_mutex;
  std::unique_ptr<prometheus::Exposer> exposer;

  prometheus::Labels labels(const MetricLabels& l) const {
    prometheus::Labels out{{"kind", std::string(l.kind)}};
    if (options.per_name && !l.name.empty()) out.emplace("name", std::string(l.name));
    return out;
  }
};

PrometheusMetrics::PrometheusMetrics() : PrometheusMetrics(Options{}) {}

PrometheusMetrics::PrometheusMetrics(Options options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
  for (std::size_t i = 0; i < kCounters.size(); ++i) {
    impl_->counters[i] = &prometheus::BuildCounter()
                              .Name("redisync_" + std::string(to_string(kCounters[i])) + "_total")
                              .Help(help(kCounters[i]))
                              .Register(*impl_->registry);
  }
  for (std::size_t i = 0; i < kHistograms.size(); ++i) {
    impl_->histograms[i] = &prometheus::BuildHistogram()
                                .Name("redisync_" + std::string(to_string(kHistograms[i])))
                                .Help(help(kHistograms[i]))
                                .Register(*impl_->registry);
  }
}

PrometheusMetrics::~PrometheusMetrics() = default;

void PrometheusMetrics::increment(const MetricLabels& labels, Counter counter,
                                  std::uint64_t n) noexcept {
  try {
    impl_->counters[static_cast<std::size_t>(counter)]->Add(impl_->labels(labels)).Increment(
        static_cast<double>(n));
  } catch (...) {
    // A metric must never break the lock (allocation failure): the event is dropped.
  }
}

void PrometheusMetrics::observe(const MetricLabels& labels, Histogram histogram,
                                double value) noexcept {
  try {
    impl_->histograms[static_cast<std::size_t>(histogram)]
        ->Add(impl_->labels(labels), buckets(histogram))
        .Observe(value);
  } catch (...) {
  }
}

int PrometheusMetrics::serve(const std::string& address) {
  std::lock_guard guard(impl_->exposer_mutex);
  if (impl_->exposer) throw ConfigError("redisync: the metrics server is already running");
  try {
    impl_->exposer = std::make_unique<prometheus::Exposer>(address);
  } catch (const std::exception& e) {
    throw ConfigError("redisync: cannot serve metrics on " + address + ": " + e.what());
  }
  impl_->exposer->RegisterCollectable(impl_->registry);
  const auto ports = impl_->exposer->GetListeningPorts();
  return ports.empty() ? 0 : ports.front();
}

std::string PrometheusMetrics::text() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, impl_->registry->Collect());
  return out.str();
}

}  // namespace redisync
