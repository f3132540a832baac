// FGD's fragmentation measure (Weng et al., ATC'23; docs/placement.md has the definition).
//
// For a target workload M — task kinds m with probabilities p_m — a node's expected fragment
// is F_n(M) = Σ p_m·F_n(m), where F_n(m), in milli-GPU, is
//   - all of the node's idle GPU if m asks no GPU, if m does not accept the node's model, if
//     the node lacks m's CPU, or if fewer than m's GPU count of its GPUs have m's share free;
//   - otherwise the idle GPU on the GPUs too small for m's share.
// Memory is not part of the measure (the authors' trace has no GPU memory).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sched/model_table.h"
#include "sched/request.h"

namespace fgpu::sched {

struct TargetTask {
  int64_t cpu_milli = 0;
  int32_t gpu_milli = 0;  // per GPU; 0 for a task without GPUs
  int gpu_count = 0;
  ModelSet models = kAnyModel;
  double weight = 0;  // probability; the workload's weights sum to 1
};

class TargetWorkload {
 public:
  TargetWorkload() = default;
  // Weights are normalised to sum to 1; tasks with no weight are dropped.
  explicit TargetWorkload(std::vector<TargetTask> tasks);

  // FGD's "typical pods": request kinds (CPU, GPU count, share, models) sorted by how often
  // they occur, most frequent first (ties: larger CPU, share, count first), cut at the
  // shortest prefix covering `coverage` (0..1] of the requests, weighted by frequency.
  static TargetWorkload MostFrequent(std::span<const Request> requests, double coverage);

  const std::vector<TargetTask>& tasks() const { return tasks_; }
  bool empty() const { return tasks_.empty(); }

  // F_n(M) of a node with `model`, free CPU and free compute on each of its GPUs.
  double NodeFragment(int model, int64_t free_cpu_milli, std::span<const int32_t> free_milli) const;

 private:
  std::vector<TargetTask> tasks_;
  std::vector<int32_t> shares_;   // distinct task shares > 0, ascending
  std::vector<int> share_index_;  // per task: its share's index in shares_, or -1
};

}  // namespace fgpu::sched
