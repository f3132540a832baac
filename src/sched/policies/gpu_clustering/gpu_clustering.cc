#include "sched/policies/gpu_clustering/gpu_clustering.h"

#include <algorithm>

#include "sched/gpu_pick.h"

namespace fgpu::sched {

namespace {

// The class of a request or placement with `gpus` GPUs of `milli` each; -1: no GPU.
int ClassOf(int gpus, int32_t milli) {
  if (gpus == 0) return -1;
  return milli < kMilliPerGpu ? 0 : gpus;
}

}  // namespace

GpuClusteringPolicy::ClassCounts& GpuClusteringPolicy::CountsOf(NodeId node) {
  if (node >= counts_.size()) counts_.resize(node + 1);
  return counts_[node];
}

NodeScore GpuClusteringPolicy::Score(const NodeView& node, const Request& request) {
  const int own = ClassOf(request.gpu_count, request.gpu_milli);
  if (own < 0) return {};
  const ClassCounts& counts = CountsOf(node.id);
  const auto classes =
      static_cast<int>(std::count_if(counts.begin(), counts.end(), [](uint32_t c) { return c > 0; }));
  const int64_t used = int64_t{8} * kMilliPerGpu - node.state.IdleGpuMilli(node.spec.gpu_count);
  int64_t score = 25 * used / (int64_t{8} * kMilliPerGpu);
  if (counts[static_cast<size_t>(own)] > 0) {
    score += classes == 1 ? 75 : 50;
  } else if (classes == 0) {
    score += 25;
  }
  return {.score = static_cast<double>(score), .gpus = BestFitGpus(node, request)};
}

void GpuClusteringPolicy::OnPlaced(const NodeView& node, const Placement& placement) {
  const int own = ClassOf(Count(placement.gpus), placement.gpu_milli);
  if (own >= 0) ++CountsOf(node.id)[static_cast<size_t>(own)];
}

void GpuClusteringPolicy::OnRemoved(const NodeView& node, const Placement& placement) {
  const int own = ClassOf(Count(placement.gpus), placement.gpu_milli);
  if (own >= 0 && CountsOf(node.id)[static_cast<size_t>(own)] > 0)
    --CountsOf(node.id)[static_cast<size_t>(own)];
}

}  // namespace fgpu::sched
