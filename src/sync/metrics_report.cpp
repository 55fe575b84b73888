// SPDX-License-Identifier: Apache-2.0
#include "sync/metrics_report.h"

#include <algorithm>

namespace redisync::detail {

namespace {

double seconds(sync::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

std::string metrics_kind(std::string_view noun) {
  std::string kind(noun);
  std::replace(kind.begin(), kind.end(), ' ', '_');
  return kind;
}

void report_acquire(const AcquireMeter& meter, std::exception_ptr error, bool acquired,
                    Hold* held) {
  const MetricLabels labels{meter.kind, meter.name};
  const auto now = sync::Clock::now();
  const auto& probe = *meter.probe;
  if (probe.wake_ups > 0) meter.sink->increment(labels, Counter::wake_ups, probe.wake_ups);
  if (error) return;
  if (!acquired) {
    meter.sink->increment(labels, Counter::timeouts, 1);
    return;
  }
  meter.sink->increment(labels, Counter::acquires, 1);
  meter.sink->observe(labels, Histogram::acquire_wait, seconds(now - meter.started));
  if (probe.attempts > 0) {
    meter.sink->observe(labels, Histogram::attempts_per_acquire, probe.attempts);
  }
  if (probe.last_wake) {
    meter.sink->observe(labels, Histogram::handoff_latency, seconds(now - *probe.last_wake));
  }
  if (held && held->count == 1) held->since = now;
}

void report_release(Metrics& sink, std::string_view kind, const std::string& name,
                    sync::Clock::time_point since) {
  if (since == sync::Clock::time_point{}) return;  // its acquisition was not measured
  sink.observe(MetricLabels{kind, name}, Histogram::hold_time,
               seconds(sync::Clock::now() - since));
}

void report_lost(Metrics& sink, std::string_view kind, const std::string& name) {
  sink.increment(MetricLabels{kind, name}, Counter::lost_locks, 1);
}

namespace {

constexpr std::string_view kPermitKind = "permit_expirable_semaphore";

std::string permit_key(const std::string& name, const std::string& raw_id) {
  std::string key = name;
  key += '\0';
  key += raw_id;
  return key;
}

sync::Clock::time_point lease_end(sync::Clock::time_point from, Duration lease) {
  if (lease < Duration{0} || lease > max_duration) return sync::Clock::time_point::max();
  return from + lease;
}

}  // namespace

void metered_permits_taken(ClientCore& core, const std::string& name,
                           const std::vector<std::string>& raw_ids, Duration lease) {
  if (!core.config().metrics) return;
  auto& permits = core.metered_permits;
  const auto now = sync::Clock::now();
  if (permits.size() > core.metered_permits_sweep_above) {
    std::erase_if(permits, [now](const auto& entry) { return entry.second.ends < now; });
    // The next sweep waits until as many again are remembered: with many permits still
    // leased, sweeping costs O(1) per permit taken, not a walk of them all each time.
    core.metered_permits_sweep_above =
        std::max(ClientCore::kMeteredPermitsSweepAbove, 2 * permits.size());
  }
  for (const auto& raw : raw_ids) {
    permits[permit_key(name, raw)] = ClientCore::MeteredPermit{now, lease_end(now, lease)};
  }
}

void metered_permit_lease(ClientCore& core, const std::string& name, const std::string& raw_id,
                          Duration lease) {
  auto it = core.metered_permits.find(permit_key(name, raw_id));
  if (it != core.metered_permits.end()) it->second.ends = lease_end(sync::Clock::now(), lease);
}

void metered_permit_released(ClientCore& core, const std::string& name, const std::string& raw_id,
                             bool held) {
  if (!core.config().metrics) return;
  auto it = core.metered_permits.find(permit_key(name, raw_id));
  if (it == core.metered_permits.end()) return;
  const auto since = it->second.since;
  core.metered_permits.erase(it);
  if (held) {
    report_release(*core.config().metrics, kPermitKind, name, since);
  } else {
    report_lost(*core.config().metrics, kPermitKind, name);
  }
}

}  // namespace redisync::detail
