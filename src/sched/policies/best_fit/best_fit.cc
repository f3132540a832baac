#include "sched/policies/best_fit/best_fit.h"

#include <cmath>

#include "sched/gpu_pick.h"

namespace fgpu::sched {

NodeScore BestFitPolicy::Score(const NodeView& node, const Request& request) {
  const double cpu_left = static_cast<double>(node.state.free_cpu_milli - request.cpu_milli);
  const double gpu_left =
      static_cast<double>(node.state.IdleGpuMilli(node.spec.gpu_count) - request.TotalGpuMilli());
  // Same operation order as the authors' code, so equal inputs truncate to equal integers.
  double leftover = 0;
  leftover += cpu_left / kMaxSpecCpuMilli * 0.5;
  leftover += gpu_left / kMaxSpecGpuMilli * 0.5;
  const double score = std::trunc((1.0 - leftover) * 100);
  return {.score = score, .gpus = BestFitGpus(node, request)};
}

}  // namespace fgpu::sched
