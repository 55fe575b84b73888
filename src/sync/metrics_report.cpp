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

}  // namespace redisync::detail
