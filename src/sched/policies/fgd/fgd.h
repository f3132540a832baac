// FGD, Fragmentation Gradient Descent (Weng et al., ATC'23): place a request where it grows
// the expected fragmentation of the target workload the least (fragmentation.h).
//
// For each node it fits on — and, for a GPU share, each GPU it fits on — the policy computes
// Δ = F_n(M) − F_n'(M), n' being the node after the placement (CPU taken; the share taken from
// that GPU, or whole GPUs from the lowest-indexed free ones). It places on the largest Δ.
//   - FGD (authors'): score = int(100 · sigmoid(Δ / 1000)), so Δs within ~40 milli-GPU tie
//     and kube-scheduler breaks the tie at random; inside a node the first GPU with the best
//     integer score wins.
//   - FGD-exact: score = Δ itself (exact argmin of the fragmentation growth).
#pragma once

#include <cstdint>
#include <vector>

#include "sched/fragmentation.h"
#include "sched/policy.h"

namespace fgpu::sched {

class FgdPolicy final : public Policy {
 public:
  enum class Scoring : uint8_t { kAuthorsInteger, kExact };

  FgdPolicy(TargetWorkload workload, Scoring scoring);

  std::string_view name() const override { return scoring_ == Scoring::kExact ? "FGD-exact" : "FGD"; }
  NodeScore Score(const NodeView& node, const Request& request) override;

 private:
  double ScoreOf(double fragment_now, double fragment_after) const;
  // F_n(M) of a node as it is now, remembered per node version (many shapes score one node).
  double FragmentNow(const NodeView& node);

  TargetWorkload workload_;
  Scoring scoring_;
  std::vector<uint32_t> memo_version_;  // node version + 1; 0: nothing remembered
  std::vector<double> memo_fragment_;
};

// Shared by FGD-style policies: F_n'(M) after taking `request` on `gpus`.
double FragmentAfter(const TargetWorkload& workload, const NodeView& node, const Request& request,
                     GpuSet gpus);

}  // namespace fgpu::sched
