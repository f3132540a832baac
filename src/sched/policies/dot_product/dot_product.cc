#include "sched/policies/dot_product/dot_product.h"

#include <cmath>

#include "sched/gpu_pick.h"
#include "sched/policies/best_fit/best_fit.h"

namespace fgpu::sched {

NodeScore DotProductPolicy::Score(const NodeView& node, const Request& request) {
  const double free_cpu = static_cast<double>(node.state.free_cpu_milli) / kMaxSpecCpuMilli;
  const double free_gpu =
      static_cast<double>(node.state.IdleGpuMilli(node.spec.gpu_count)) / kMaxSpecGpuMilli;
  const double want_cpu = static_cast<double>(request.cpu_milli) / kMaxSpecCpuMilli;
  const double want_gpu = static_cast<double>(request.TotalGpuMilli()) / kMaxSpecGpuMilli;
  double product = 0;
  product += free_cpu * want_cpu;
  product += free_gpu * want_gpu;
  const double score = std::trunc(100 * (1 - product / 2));
  return {.score = score, .gpus = BestFitGpus(node, request)};
}

}  // namespace fgpu::sched
