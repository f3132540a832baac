// BestFit (FGD paper baseline): the node with the least CPU and GPU left over after placing,
//   score = int(100 · (1 − Σ_{r ∈ {CPU, GPU}} 0.5 · (free_r − request_r) / max_r)),
// with max_CPU = 128 cores and max_GPU = 8 GPUs (the largest node shape), GPU counted as the
// node's total free milli-GPU. Integer scores, as the authors': near ties are broken at random.
// GPUs: best fit (gpu_pick.h).
#pragma once

#include "sched/policy.h"

namespace fgpu::sched {

// The normalisation constants the FGD simulator uses for vector scores.
inline constexpr double kMaxSpecCpuMilli = 128'000;
inline constexpr double kMaxSpecGpuMilli = 8'000;

class BestFitPolicy final : public Policy {
 public:
  std::string_view name() const override { return "BestFit"; }
  NodeScore Score(const NodeView& node, const Request& request) override;
};

}  // namespace fgpu::sched
