#include "sched/policies/random/random.h"

#include "sched/gpu_pick.h"

namespace fgpu::sched {

NodeScore RandomPolicy::Score(const NodeView& /*node*/, const Request& /*request*/) { return {}; }

GpuSet RandomPolicy::ChooseGpus(const NodeView& node, const Request& request, const NodeScore& /*scored*/,
                                Rng& rng) {
  return RandomFitGpus(node, request, rng);
}

}  // namespace fgpu::sched
