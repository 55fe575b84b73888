// SPDX-License-Identifier: Apache-2.0
#include "metrics_kind_labels.h"

#include "kinds.h"

namespace redisync::cli {
namespace {

class KindLabelMetrics final : public Metrics {
 public:
  explicit KindLabelMetrics(std::shared_ptr<Metrics> next) : next_(std::move(next)) {}

  void increment(const MetricLabels& labels, Counter counter, std::uint64_t n) noexcept override {
    next_->increment(renamed(labels), counter, n);
  }
  void observe(const MetricLabels& labels, Histogram histogram, double value) noexcept override {
    next_->observe(renamed(labels), histogram, value);
  }

 private:
  // The table's names are static strings: the renamed label outlives the call.
  static MetricLabels renamed(const MetricLabels& labels) {
    const auto kind = kind_of_metrics_label(labels.kind);
    return kind ? MetricLabels{kind_name(*kind), labels.name} : labels;
  }

  std::shared_ptr<Metrics> next_;
};

}  // namespace

std::shared_ptr<Metrics> with_cli_kind_labels(std::shared_ptr<Metrics> next) {
  return std::make_shared<KindLabelMetrics>(std::move(next));
}

}  // namespace redisync::cli
