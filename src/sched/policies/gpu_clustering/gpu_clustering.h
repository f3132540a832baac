// GpuClustering (FGD paper baseline): keep requests of one class together. Classes: a GPU
// share, or k whole GPUs (one class per k). A node scores in a band by what it already hosts:
//   only this class (75,100]; this and others (50,75]; nothing (25,50]; only others (0,25];
// inside a band, more GPU allocated scores higher: + 25·(8 GPUs − free GPU)/8 GPUs, integer.
// Requests without GPUs score 0 everywhere (random). GPUs: best fit.
#pragma once

#include <array>
#include <vector>

#include "sched/policy.h"

namespace fgpu::sched {

class GpuClusteringPolicy final : public Policy {
 public:
  std::string_view name() const override { return "GpuClustering"; }
  NodeScore Score(const NodeView& node, const Request& request) override;
  void OnPlaced(const NodeView& node, const Placement& placement) override;
  void OnRemoved(const NodeView& node, const Placement& placement) override;

 private:
  // Per node, how many placements of each class it hosts: [0] shares, [k] k whole GPUs.
  using ClassCounts = std::array<uint32_t, kMaxGpusPerNode + 1>;
  ClassCounts& CountsOf(NodeId node);

  std::vector<ClassCounts> counts_;
};

}  // namespace fgpu::sched
