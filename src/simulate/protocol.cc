#include "simulate/protocol.h"

#include <algorithm>
#include <numeric>

#include "sched/rng.h"

namespace fgpu::simulate {

namespace {

constexpr double kTypicalCoverage = 0.95;

}  // namespace

std::vector<uint32_t> ArrivalOrder(const PodList& pods, uint64_t seed, double inflate,
                                   int64_t capacity_gpu_milli) {
  std::vector<uint32_t> order(pods.pods.size());
  std::iota(order.begin(), order.end(), 0U);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t left, uint32_t right) {
    return pods.pods[left].name < pods.pods[right].name;
  });
  sched::Rng rng(seed);
  for (size_t last = order.size(); last > 1; --last) {
    std::swap(order[last - 1], order[rng.Uniform(last)]);
  }
  const bool any_gpu = std::any_of(pods.pods.begin(), pods.pods.end(),
                                   [](const Pod& pod) { return pod.request.gpu_milli > 0; });
  if (inflate <= 0 || !any_gpu) return order;  // without GPU pods topping up would never end

  int64_t requested = 0;
  for (const Pod& pod : pods.pods) requested += pod.request.TotalGpuMilli();
  const double target = inflate * static_cast<double>(capacity_gpu_milli);
  while (true) {
    const auto clone = static_cast<uint32_t>(rng.Uniform(pods.pods.size()));
    const sched::Request& request = pods.pods[clone].request;
    if (static_cast<double>(requested + request.gpu_milli) > target) break;
    requested += request.TotalGpuMilli();
    order.push_back(clone);
  }
  return order;
}

sched::TargetWorkload TypicalWorkload(const PodList& pods) {
  std::vector<sched::Request> requests;
  requests.reserve(pods.pods.size());
  for (const Pod& pod : pods.pods) requests.push_back(pod.request);
  return sched::TargetWorkload::MostFrequent(requests, kTypicalCoverage);
}

}  // namespace fgpu::simulate
