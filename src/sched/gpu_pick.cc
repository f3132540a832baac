#include "sched/gpu_pick.h"

#include <array>

namespace fgpu::sched {

GpuSet BestFitGpus(const NodeView& node, const Request& request) {
  if (request.gpu_count == 0) return 0;
  const GpuSet fitting = FittingGpus(node, request);
  if (Count(fitting) < request.gpu_count) return 0;
  GpuSet chosen = 0;
  for (int taken = 0; taken < request.gpu_count; ++taken) {
    int best = -1;
    for (int gpu = 0; gpu < node.spec.gpu_count; ++gpu) {
      if (!Contains(fitting, gpu) || Contains(chosen, gpu)) continue;
      if (best < 0 || node.state.free_milli[static_cast<size_t>(gpu)] <
                          node.state.free_milli[static_cast<size_t>(best)]) {
        best = gpu;
      }
    }
    chosen |= GpuBit(best);
  }
  return chosen;
}

GpuSet RandomFitGpus(const NodeView& node, const Request& request, Rng& rng) {
  if (!request.IsSharing()) return BestFitGpus(node, request);
  const GpuSet fitting = FittingGpus(node, request);
  const int candidates = Count(fitting);
  if (candidates == 0) return 0;
  auto pick = static_cast<int>(rng.Uniform(static_cast<uint64_t>(candidates)));
  for (int gpu = 0; gpu < node.spec.gpu_count; ++gpu) {
    if (Contains(fitting, gpu) && pick-- == 0) return GpuBit(gpu);
  }
  return 0;
}

}  // namespace fgpu::sched
