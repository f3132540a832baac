#include "sched/policies/fgd/fgd.h"

#include <array>
#include <cmath>

#include "sched/gpu_pick.h"

namespace fgpu::sched {

double FragmentAfter(const TargetWorkload& workload, const NodeView& node, const Request& request,
                     GpuSet gpus) {
  std::array<int32_t, kMaxGpusPerNode> free = node.state.free_milli;
  for (int gpu = 0; gpu < node.spec.gpu_count; ++gpu) {
    if (Contains(gpus, gpu)) free[static_cast<size_t>(gpu)] -= request.gpu_milli;
  }
  return workload.NodeFragment(node.spec.model, node.state.free_cpu_milli - request.cpu_milli,
                               {free.data(), static_cast<size_t>(node.spec.gpu_count)});
}

FgdPolicy::FgdPolicy(TargetWorkload workload, Scoring scoring)
    : workload_(std::move(workload)), scoring_(scoring) {}

double FgdPolicy::ScoreOf(double fragment_now, double fragment_after) const {
  const double growth_avoided = fragment_now - fragment_after;
  if (scoring_ == Scoring::kExact) return growth_avoided;
  const double sigmoid = 1.0 / (1.0 + std::exp(-growth_avoided / 1000));
  return std::trunc(sigmoid * 100);
}

double FgdPolicy::FragmentNow(const NodeView& node) {
  if (node.id >= memo_version_.size()) {
    memo_version_.resize(node.id + 1, 0);
    memo_fragment_.resize(node.id + 1, 0);
  }
  if (memo_version_[node.id] != node.state.version + 1) {
    memo_fragment_[node.id] =
        workload_.NodeFragment(node.spec.model, node.state.free_cpu_milli, node.free_milli());
    memo_version_[node.id] = node.state.version + 1;
  }
  return memo_fragment_[node.id];
}

NodeScore FgdPolicy::Score(const NodeView& node, const Request& request) {
  const double now = FragmentNow(node);
  if (!request.IsSharing()) {
    const GpuSet gpus = BestFitGpus(node, request);
    return {.score = ScoreOf(now, FragmentAfter(workload_, node, request, gpus)), .gpus = gpus};
  }
  // Each GPU the share fits on, in index order; the first best wins. GPUs with equal free
  // compute leave equal nodes behind, so only the first of each free value is evaluated.
  const GpuSet fitting = FittingGpus(node, request);
  NodeScore best{.score = 0, .gpus = 0};
  for (int gpu = 0; gpu < node.spec.gpu_count; ++gpu) {
    if (!Contains(fitting, gpu)) continue;
    bool seen = false;
    for (int earlier = 0; earlier < gpu && !seen; ++earlier) {
      seen = Contains(fitting, earlier) && node.state.free_milli[static_cast<size_t>(earlier)] ==
                                               node.state.free_milli[static_cast<size_t>(gpu)];
    }
    if (seen) continue;
    const double score = ScoreOf(now, FragmentAfter(workload_, node, request, GpuBit(gpu)));
    if (best.gpus == 0 || score > best.score) best = {.score = score, .gpus = GpuBit(gpu)};
  }
  return best;
}

}  // namespace fgpu::sched
