// Which GPUs of a node a request takes, for the policies that do not choose GPUs by their own
// score. These follow the FGD authors' simulator, so baselines match their numbers.
#pragma once

#include "sched/cluster.h"
#include "sched/gpu_set.h"
#include "sched/request.h"
#include "sched/rng.h"

namespace fgpu::sched {

// Best fit: the gpu_count fitting GPUs with the least free compute (lowest index among
// equals). A share lands on the tightest GPU it fits on; whole GPUs are the lowest-indexed
// free ones. Empty if the request does not fit. CPU-only requests take no GPUs.
GpuSet BestFitGpus(const NodeView& node, const Request& request);

// A share on a uniformly random fitting GPU; whole GPUs as BestFitGpus.
GpuSet RandomFitGpus(const NodeView& node, const Request& request, Rng& rng);

}  // namespace fgpu::sched
