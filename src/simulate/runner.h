// Runs a plan's policy × seed replays on `jobs` threads (each run alone on its thread, its
// scheduler private, the scenario shared read-only), reporting progress through atomics a
// display can poll.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "simulate/plan.h"
#include "simulate/replay.h"

namespace fgpu::simulate {

// Counters only (relaxed atomics): a display thread may read them while RunAll writes.
struct Progress {
  std::atomic<int64_t> pods_total{0};  // set when RunAll starts
  std::atomic<int> runs_total{0};
  std::atomic<int64_t> pods_done{0};
  std::atomic<int> runs_done{0};
};

// Results in plan order: for each policy, for each seed. The first failing run's error stops
// the rest.
Result<std::vector<RunResult>> RunAll(const Scenario& scenario, const RunPlan& plan, Progress& progress);

}  // namespace fgpu::simulate
