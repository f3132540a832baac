// FGD+: fgpu's placement policy. FGD (fgd.h) with two corrections the FGD measure misses,
// each worth points of GPU on the Alibaba 2023 traces (docs/placement.md "FGD+"):
//
//  1. CPU stranding. A node whose free CPU cannot feed its idle GPU at the workload's CPU per
//     GPU strands that GPU. With ρ = CPU per milli-GPU of the target workload's GPU tasks,
//       stranded(n) = max(0, idle GPU − free CPU / ρ),
//     and a placement is charged its growth: Δ = F_n(M) − F_n'(M) − (stranded(n') − stranded(n)).
//  2. Model scarcity. Requests that accept any model should leave alone the models that
//     constrained requests need (model_scarcity.h). A placement on model T costs
//       d · min(1, pressure(T))   (d: the request's GPU milli),
//     applied per model at each decision (Policy::ModelBias), so node scores stay cached.
//
// The node score is FGD's integer int(100·sigmoid(Δ/1000)) — its coarse buckets, with ties
// going to the first node of a fixed order, are what packs (FGD-exact, which spreads, loses
// 2.4 points on `default`); the model cost is converted at the sigmoid's slope at 0.
#pragma once

#include <cstdint>

#include "sched/fragmentation.h"
#include "sched/policies/fgd_plus/model_scarcity.h"
#include "sched/policy.h"

namespace fgpu::sched {

class FgdPlusPolicy final : public Policy {
 public:
  struct Options {
    // Arrivals the model-scarcity estimate looks back over (0 turns it off).
    size_t scarcity_window = 2000;
    // Weight of the stranded-GPU growth (0 turns it off).
    double stranding_weight = 1.0;
  };

  FgdPlusPolicy(TargetWorkload workload, Options options);

  std::string_view name() const override { return "FGD+"; }
  void OnAttach(const Cluster& cluster) override;
  bool Observe(const Request& request) override;
  NodeScore Score(const NodeView& node, const Request& request) override;
  double ModelBias(int model, const Request& request) override;
  bool has_model_bias() const override { return options_.scarcity_window > 0; }
  void OnPlaced(const NodeView& node, const Placement& placement) override;
  void OnRemoved(const NodeView& node, const Placement& placement) override;

 private:
  double StrandingGrowth(const NodeView& node, const Request& request) const;

  TargetWorkload workload_;
  Options options_;
  double cpu_per_gpu_milli_ = 0;  // ρ
  ModelScarcity scarcity_;
};

// GPU milli a node cannot feed: idle GPU beyond what free CPU supports at `cpu_per_gpu_milli`.
double StrandedGpuMilli(int64_t idle_gpu_milli, int64_t free_cpu_milli, double cpu_per_gpu_milli);

// ρ: CPU milli per GPU milli over the GPU tasks of a workload (0 if it has none).
double CpuPerGpuMilli(const TargetWorkload& workload);

}  // namespace fgpu::sched
