// What to run: policies × seeds, parsed from the command line's words.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sched/scheduler.h"

namespace fgpu::simulate {

struct RunPlan {
  std::vector<std::string> policies;  // canonical names, no duplicates
  std::vector<uint64_t> seeds;
  double inflate = 1.3;
  int jobs = 1;
  sched::TieBreak ties = sched::TieBreak::kFirstInOrder;
};

// "first" (the authors' simulator: first node of a seeded order) or "random".
Result<sched::TieBreak> ParseTieBreak(std::string_view name);

// "all", or names separated by commas (any case). NotFound for an unknown name.
Result<std::vector<std::string>> ParsePolicies(std::string_view list);
// Seeds and inclusive ranges separated by commas: "42-51", "1,5,7-9". At most 10,000 seeds.
Result<std::vector<uint64_t>> ParseSeeds(std::string_view list);

}  // namespace fgpu::simulate
