// SPDX-License-Identifier: Apache-2.0
// The Metrics hook: count acquisitions and sum acquire waits per kind. (A Prometheus sink
// comes with -DREDISYNC_PROMETHEUS=ON: redisync/prometheus_metrics.h.)
//
//   example_metrics [redis://127.0.0.1:6379]
#include <redisync/redisync.h>

#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <string>

// [metrics]
// Called from the thread running the Client's loop and from callers' threads: thread-safe,
// never blocking.
class WaitTotals : public redisync::Metrics {
 public:
  void increment(const redisync::MetricLabels& labels, redisync::Counter counter,
                 std::uint64_t n) noexcept override {
    if (counter != redisync::Counter::acquires) return;
    std::lock_guard guard(mutex_);
    acquires_[std::string(labels.kind)] += n;
  }
  void observe(const redisync::MetricLabels& labels, redisync::Histogram histogram,
               double value) noexcept override {
    if (histogram != redisync::Histogram::acquire_wait) return;
    std::lock_guard guard(mutex_);
    wait_seconds_[std::string(labels.kind)] += value;
  }
  void print() {
    std::lock_guard guard(mutex_);
    for (const auto& [kind, n] : acquires_) {
      std::cout << kind << ": " << n << " acquisitions, " << wait_seconds_[kind] * 1000
                << " ms waiting in all\n";
    }
  }
  std::uint64_t acquires(const std::string& kind) {
    std::lock_guard guard(mutex_);
    return acquires_[kind];
  }

 private:
  std::mutex mutex_;
  std::map<std::string, std::uint64_t> acquires_;
  std::map<std::string, double> wait_seconds_;
};

int run(const std::string& url) {
  auto totals = std::make_shared<WaitTotals>();
  redisync::Config config = redisync::Config::from_url(url);
  config.metrics = totals;  // every lock of this Client reports to it
  redisync::Client client(config);
  auto lock = client.lock("example:metrics");
  for (int i = 0; i < 3; ++i) {
    std::lock_guard guard(lock);
  }
  totals->print();
  return totals->acquires("lock") == 3 ? 0 : 1;
}
// [end]

int main(int argc, char** argv) {
  try {
    return run(argc > 1 ? argv[1] : "redis://127.0.0.1:6379");
  } catch (const redisync::Error& e) {
    std::cerr << "example_metrics: " << e.what() << "\n";
    return 1;
  }
}
