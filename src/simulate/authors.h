// The FGD authors' published per-seed results (kubernetes-scheduler-simulator,
// experiments/analysis/expected_results/analysis_allo_discrete.csv): GPU allocation % by
// arrival % for each trace × policy × seed, to print our numbers beside theirs.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "simulate/summary.h"

namespace fgpu::simulate {

class AuthorsResults {
 public:
  // InvalidArgument (file:line) for a file that is not in that format.
  static Result<AuthorsResults> Load(const std::string& path);

  // Unallocated GPU % at `arrived_pct` over the authors' seeds for a trace (the pod file's
  // name without ".csv", e.g. "openb_pod_list_default") and one of their policies (our names:
  // Random, DotProd, GpuClustering, GpuPacking, BestFit, FGD). nullopt if they have no data.
  std::optional<SeedStat> Unallocated(std::string_view trace, std::string_view policy, int arrived_pct) const;

 private:
  // (trace, policy) → per seed: allocation % at arrived 0..N (NaN where missing).
  std::map<std::pair<std::string, std::string>, std::vector<std::vector<double>>> runs_;
};

// "openb_pod_list_default" from ".../openb_pod_list_default.csv".
std::string TraceName(std::string_view pods_path);

}  // namespace fgpu::simulate
