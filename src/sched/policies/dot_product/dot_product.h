// DotProd (Tetris-style, FGD paper baseline): the node whose free (CPU, total GPU) vector has
// the smallest dot product with the request, both normalised by the largest node shape:
//   score = int(100 · (1 − (free · request) / 2)).
// A small product means the request uses up what the node has left (a tight fit). Integer
// scores with random ties; GPUs: best fit.
#pragma once

#include "sched/policy.h"

namespace fgpu::sched {

class DotProductPolicy final : public Policy {
 public:
  std::string_view name() const override { return "DotProd"; }
  NodeScore Score(const NodeView& node, const Request& request) override;
};

}  // namespace fgpu::sched
