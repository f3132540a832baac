// How contested each GPU model is, learned online from recent arrivals.
//
// Over a sliding window of requests, demand that accepts only some models is apportioned to
// those models by capacity; a model's *pressure* compares that constrained demand with what
// the model has left:
//   pressure(T) = (constrained demand for T / all demand in the window) × (free GPU in the
//                 cluster / free GPU of T).
// Pressure ≥ 1 means requests that can run nowhere else are expected to use up T before the
// rest of the cluster fills; a request that could go elsewhere should not take T.
#pragma once

#include <array>
#include <cstdint>
#include <deque>

#include "sched/cluster.h"
#include "sched/model_table.h"
#include "sched/request.h"

namespace fgpu::sched {

class ModelScarcity {
 public:
  explicit ModelScarcity(size_t window = 2000) : window_(window) {}

  void Attach(const Cluster& cluster);
  // Records an arriving request (whether or not it will be placed).
  void Observe(const Request& request);
  // GPU milli taken from (positive) or given back to (negative) a node of `model`.
  void Taken(int model, int64_t gpu_milli);

  double Pressure(int model) const;

 private:
  struct Seen {
    int64_t demand;
    ModelSet models;
  };
  void Count(const Seen& seen, double sign);

  size_t window_;
  std::deque<Seen> recent_;
  double window_demand_ = 0;
  std::array<double, kMaxModels> constrained_{};
  std::array<int64_t, kMaxModels> capacity_{};
  std::array<int64_t, kMaxModels> free_{};
  int64_t free_total_ = 0;
};

}  // namespace fgpu::sched
