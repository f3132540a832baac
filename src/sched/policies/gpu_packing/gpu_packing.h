// GpuPacking (FGD paper baseline), in three bands, best first:
//   1. the request fits on GPUs already in use:      100 − (their free %)/10, at least 50;
//   2. it needs fully free GPUs on a node in use:    50 − (free GPUs it takes), at least 33;
//   3. the node is entirely idle:                    max(33 − its GPUs, its GPUs).
// GPUs are considered tightest first. Requests without GPUs score 0 everywhere (random).
// Integer scores with random ties; GPUs: best fit.
#pragma once

#include "sched/policy.h"

namespace fgpu::sched {

class GpuPackingPolicy final : public Policy {
 public:
  std::string_view name() const override { return "GpuPacking"; }
  NodeScore Score(const NodeView& node, const Request& request) override;
};

}  // namespace fgpu::sched
