// The FGD experiment protocol (Weng et al., ATC'23; docs/placement.md "Protocol"): which pods
// arrive, in what order, and the workload fragmentation is measured against.
#pragma once

#include <cstdint>
#include <vector>

#include "sched/fragmentation.h"
#include "simulate/trace.h"

namespace fgpu::simulate {

// The arrival sequence of one run, as indices into `pods`:
//  1. every pod once, sorted by name, then shuffled with `seed`;
//  2. then clones drawn uniformly (with replacement, same random stream) until the requested
//     GPU reaches `inflate` × cluster capacity. As in the authors' code, a clone is refused —
//     and topping up stops — when its *per-GPU* share would pass the target, so the last
//     multi-GPU clone may overshoot it.
// inflate <= 0 keeps only step 1.
std::vector<uint32_t> ArrivalOrder(const PodList& pods, uint64_t seed, double inflate,
                                   int64_t capacity_gpu_milli);

// FGD's target workload for a trace: the most frequent request kinds covering 95% of the
// original pods (CPU-only pods included).
sched::TargetWorkload TypicalWorkload(const PodList& pods);

}  // namespace fgpu::simulate
