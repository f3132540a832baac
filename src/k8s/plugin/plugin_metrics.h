// The Kubernetes plugins' own Prometheus metrics (docs/kubernetes.md "Metrics"): how long
// prepares take, how many fail, what is published and whether the kubelet has us registered.
// The agent's /metrics carries each slice's pod, namespace and claim; these say how the
// plugin itself is doing.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace fgpu::k8s {

// A Prometheus histogram of durations in seconds, lock-protected (a few calls a second).
class LatencyHistogram {
 public:
  static constexpr std::array<double, 12> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                     0.1,   0.25,   0.5,   1,    2.5,   10};
  void Observe(std::chrono::nanoseconds duration);
  // "<name>_bucket{le=…} n" lines, _sum and _count, with `labels` ("" or `a="b",`).
  std::string Text(const std::string& name, const std::string& labels) const;
  uint64_t count() const;

 private:
  mutable std::mutex mutex_;
  std::array<uint64_t, kBounds.size()> buckets_{};
  uint64_t count_ = 0;
  double sum_ = 0;
};

// One metric line builder for the plugins' /metrics: HELP and TYPE once, then the samples.
std::string MetricFamily(const std::string& name, const std::string& type, const std::string& help,
                         const std::string& samples);
std::string Sample(const std::string& name, const std::string& labels, double value);

}  // namespace fgpu::k8s
