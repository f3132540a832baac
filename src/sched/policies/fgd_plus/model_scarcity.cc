#include "sched/policies/fgd_plus/model_scarcity.h"

#include <algorithm>

namespace fgpu::sched {

void ModelScarcity::Attach(const Cluster& cluster) {
  capacity_.fill(0);
  for (NodeId node = 0; node < static_cast<NodeId>(cluster.node_count()); ++node) {
    const NodeSpec& spec = cluster.spec(node);
    if (spec.model >= 0) capacity_[static_cast<size_t>(spec.model)] += int64_t{spec.gpu_count} * kMilliPerGpu;
  }
  free_ = capacity_;
  free_total_ = 0;
  for (int64_t capacity : capacity_) free_total_ += capacity;
  free_total_ -= cluster.used_gpu_milli();
}

void ModelScarcity::Count(const Seen& seen, double sign) {
  window_demand_ += sign * static_cast<double>(seen.demand);
  if (seen.models == kAnyModel) return;
  int64_t accepted_capacity = 0;
  for (int model = 0; model < kMaxModels; ++model) {
    if (Accepts(seen.models, model)) accepted_capacity += capacity_[static_cast<size_t>(model)];
  }
  if (accepted_capacity == 0) return;  // it fits no model here: it takes nothing from anyone
  for (int model = 0; model < kMaxModels; ++model) {
    if (!Accepts(seen.models, model)) continue;
    const double share =
        static_cast<double>(capacity_[static_cast<size_t>(model)]) / static_cast<double>(accepted_capacity);
    constrained_[static_cast<size_t>(model)] += sign * static_cast<double>(seen.demand) * share;
  }
}

void ModelScarcity::Observe(const Request& request) {
  if (window_ == 0) return;
  recent_.push_back({request.TotalGpuMilli(), request.gpu_count > 0 ? request.models : kAnyModel});
  Count(recent_.back(), 1);
  if (recent_.size() > window_) {
    Count(recent_.front(), -1);
    recent_.pop_front();
  }
}

void ModelScarcity::Taken(int model, int64_t gpu_milli) {
  if (model >= 0 && model < kMaxModels) free_[static_cast<size_t>(model)] -= gpu_milli;
  free_total_ -= gpu_milli;
}

double ModelScarcity::Pressure(int model) const {
  if (model < 0 || model >= kMaxModels || window_demand_ <= 0) return 0;
  const double constrained_share = constrained_[static_cast<size_t>(model)] / window_demand_;
  const double free_model = std::max<double>(1.0, static_cast<double>(free_[static_cast<size_t>(model)]));
  return std::max(0.0, constrained_share * static_cast<double>(free_total_) / free_model);
}

}  // namespace fgpu::sched
