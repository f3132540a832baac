// SchedPlacer: where the agent puts a slice, decided by the placement engine (src/sched) with a
// configurable policy (`fgpu agent --policy`, default FGD+; docs/agent.md "Placement").
//
// Each GPU of the machine is modelled as a one-GPU node (a machine's GPUs may differ in memory),
// its slices applied as placements (share in milli-GPU, memory cap) and an exclusive GPU as fully
// used; the policy scores the GPUs that fit. Fragmentation-aware policies (FGD, FGD+) measure
// against the mix of the slices the agent holds plus the request. Stateless: built per decision
// from the agent's records, which stay the one truth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "agent/slice_record.h"
#include "agent/slice_service.h"
#include "core/status.h"

namespace fgpu::agent {

class SchedPlacer {
 public:
  // NotFound (listing the policies) for an unknown name.
  static Result<SchedPlacer> Create(const std::string& policy);

  // The index in `rooms` of the GPU for a slice of `memory` bytes and `share` percent;
  // ResourceExhausted when none fits.
  Result<std::size_t> Choose(const std::vector<GpuRoom>& rooms, const std::vector<SliceRecord>& slices,
                             uint64_t memory, uint32_t share) const;
  const std::string& policy() const { return policy_; }

 private:
  explicit SchedPlacer(std::string policy) : policy_(std::move(policy)) {}
  std::string policy_;
};

}  // namespace fgpu::agent
