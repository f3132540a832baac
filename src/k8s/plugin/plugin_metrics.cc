#include "k8s/plugin/plugin_metrics.h"

#include <cstdio>

namespace fgpu::k8s {
namespace {

std::string Number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

}  // namespace

void LatencyHistogram::Observe(std::chrono::nanoseconds duration) {
  const double seconds = std::chrono::duration<double>(duration).count();
  std::lock_guard lock(mutex_);
  for (std::size_t i = 0; i < kBounds.size(); ++i) {
    if (seconds <= kBounds[i]) ++buckets_[i];
  }
  ++count_;
  sum_ += seconds;
}

uint64_t LatencyHistogram::count() const {
  std::lock_guard lock(mutex_);
  return count_;
}

std::string LatencyHistogram::Text(const std::string& name, const std::string& labels) const {
  std::lock_guard lock(mutex_);
  std::string text;
  for (std::size_t i = 0; i < kBounds.size(); ++i) {
    text += name + "_bucket{" + labels + "le=\"" + Number(kBounds[i]) + "\"} " + std::to_string(buckets_[i]) + "\n";
  }
  text += name + "_bucket{" + labels + "le=\"+Inf\"} " + std::to_string(count_) + "\n";
  const std::string plain = labels.empty() ? "" : "{" + labels.substr(0, labels.size() - 1) + "}";
  text += name + "_sum" + plain + " " + Number(sum_) + "\n";
  text += name + "_count" + plain + " " + std::to_string(count_) + "\n";
  return text;
}

std::string MetricFamily(const std::string& name, const std::string& type, const std::string& help,
                         const std::string& samples) {
  return "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n" + samples;
}

std::string Sample(const std::string& name, const std::string& labels, double value) {
  return name + (labels.empty() ? "" : "{" + labels + "}") + " " + Number(value) + "\n";
}

}  // namespace fgpu::k8s
