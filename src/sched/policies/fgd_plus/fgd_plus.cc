#include "sched/policies/fgd_plus/fgd_plus.h"

#include <algorithm>
#include <cmath>

#include "sched/gpu_pick.h"
#include "sched/policies/fgd/fgd.h"

namespace fgpu::sched {

namespace {

// FGD's node score of a fragmentation change, in [0, 100].
double SigmoidScore(double growth_avoided) {
  return std::trunc(100.0 / (1.0 + std::exp(-growth_avoided / 1000)));
}
// The slope of SigmoidScore at 0, per milli-GPU: converts a milli-GPU cost to score points.
constexpr double kPointsPerMilli = 100.0 * 0.25 / 1000;

}  // namespace

double StrandedGpuMilli(int64_t idle_gpu_milli, int64_t free_cpu_milli, double cpu_per_gpu_milli) {
  if (cpu_per_gpu_milli <= 0 || idle_gpu_milli <= 0) return 0;
  return std::max(
      0.0, static_cast<double>(idle_gpu_milli) - static_cast<double>(free_cpu_milli) / cpu_per_gpu_milli);
}

double CpuPerGpuMilli(const TargetWorkload& workload) {
  double cpu = 0;
  double gpu = 0;
  for (const TargetTask& task : workload.tasks()) {
    if (task.gpu_count == 0) continue;
    cpu += task.weight * static_cast<double>(task.cpu_milli);
    gpu += task.weight * task.gpu_count * task.gpu_milli;
  }
  return gpu > 0 ? cpu / gpu : 0;
}

FgdPlusPolicy::FgdPlusPolicy(TargetWorkload workload, Options options)
    : workload_(std::move(workload)),
      options_(options),
      cpu_per_gpu_milli_(CpuPerGpuMilli(workload_)),
      scarcity_(options.scarcity_window) {}

void FgdPlusPolicy::OnAttach(const Cluster& cluster) { scarcity_.Attach(cluster); }

bool FgdPlusPolicy::Observe(const Request& request) {
  scarcity_.Observe(request);
  return false;  // the scarcity cost is a per-model bias: cached node scores stay valid
}

double FgdPlusPolicy::StrandingGrowth(const NodeView& node, const Request& request) const {
  if (options_.stranding_weight == 0) return 0;
  const int64_t idle = node.state.IdleGpuMilli(node.spec.gpu_count);
  const double before = StrandedGpuMilli(idle, node.state.free_cpu_milli, cpu_per_gpu_milli_);
  const double after = StrandedGpuMilli(idle - request.TotalGpuMilli(),
                                        node.state.free_cpu_milli - request.cpu_milli, cpu_per_gpu_milli_);
  return options_.stranding_weight * (after - before);
}

NodeScore FgdPlusPolicy::Score(const NodeView& node, const Request& request) {
  const double now = workload_.NodeFragment(node.spec.model, node.state.free_cpu_milli, node.free_milli());
  const double stranding = StrandingGrowth(node, request);
  const auto score_of = [&](GpuSet gpus) {
    return SigmoidScore(now - FragmentAfter(workload_, node, request, gpus) - stranding);
  };
  if (!request.IsSharing()) {
    const GpuSet gpus = BestFitGpus(node, request);
    return {.score = score_of(gpus), .gpus = gpus};
  }
  // As FGD: the first GPU with the best score; equal free compute gives equal outcomes.
  const GpuSet fitting = FittingGpus(node, request);
  NodeScore best{.score = 0, .gpus = 0};
  GpuSet seen_free_values = 0;
  for (int gpu = 0; gpu < node.spec.gpu_count; ++gpu) {
    if (!Contains(fitting, gpu)) continue;
    bool duplicate = false;
    for (int earlier = 0; earlier < gpu && !duplicate; ++earlier) {
      duplicate =
          Contains(seen_free_values, earlier) && node.state.free_milli[static_cast<size_t>(earlier)] ==
                                                     node.state.free_milli[static_cast<size_t>(gpu)];
    }
    if (duplicate) continue;
    seen_free_values |= GpuBit(gpu);
    const double score = score_of(GpuBit(gpu));
    if (best.gpus == 0 || score > best.score) best = {.score = score, .gpus = GpuBit(gpu)};
  }
  return best;
}

double FgdPlusPolicy::ModelBias(int model, const Request& request) {
  if (request.gpu_count == 0) return 0;
  const double cost = static_cast<double>(request.TotalGpuMilli()) * std::min(1.0, scarcity_.Pressure(model));
  return -kPointsPerMilli * cost;
}

void FgdPlusPolicy::OnPlaced(const NodeView& node, const Placement& placement) {
  scarcity_.Taken(node.spec.model, int64_t{Count(placement.gpus)} * placement.gpu_milli);
}

void FgdPlusPolicy::OnRemoved(const NodeView& node, const Placement& placement) {
  scarcity_.Taken(node.spec.model, -int64_t{Count(placement.gpus)} * placement.gpu_milli);
}

}  // namespace fgpu::sched
