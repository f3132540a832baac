// Random: every node that fits is equally good; a share goes to a random GPU that fits (whole
// GPUs: the lowest-indexed free ones). The FGD paper's lower baseline.
#pragma once

#include "sched/policy.h"

namespace fgpu::sched {

class RandomPolicy final : public Policy {
 public:
  std::string_view name() const override { return "Random"; }
  NodeScore Score(const NodeView& node, const Request& request) override;
  GpuSet ChooseGpus(const NodeView& node, const Request& request, const NodeScore& scored, Rng& rng) override;
  bool random_ties() const override { return true; }
};

}  // namespace fgpu::sched
