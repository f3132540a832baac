// Per-policy results over seeds: the numbers the table, the JSON and the plot show.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "simulate/replay.h"

namespace fgpu::simulate {

// A quantity over seeds. n == 0: no run had it (every field then NaN).
struct SeedStat {
  double mean = 0;
  double min = 0;
  double max = 0;
  int n = 0;
};
SeedStat StatOf(const std::vector<double>& values);

struct CurvePoint {
  int arrived_pct = 0;
  SeedStat unallocated_pct;  // 100 − allocated, over seeds
};

struct SeedResult {
  uint64_t seed = 0;
  double unallocated_at_100 = 0;
  double unallocated_at_end = 0;
  int64_t arrivals = 0;
  int64_t failed = 0;
};

struct PolicySummary {
  std::string policy;
  int end_pct = 130;            // round(inflate × 100): the "end" column
  SeedStat unallocated_at_100;  // % of cluster GPU, at arrived = 100%
  SeedStat unallocated_at_end;  // at arrived = end_pct
  SeedStat fragment_at_80;      // FGD fragmentation, % of cluster GPU
  SeedStat fragment_at_100;
  SeedStat shortfall_over_1pct_at;  // first arrival % where arrived − allocated > 1 point
  SeedStat arrivals;
  SeedStat failed;
  double decisions_per_sec = 0;  // decisions / their total time, one core
  double p50_decision_us = 0;
  double p99_decision_us = 0;
  double max_decision_us = 0;
  std::vector<CurvePoint> curve;  // arrived 0..end_pct
  std::vector<SeedResult> seeds;
};

// Groups runs by policy (in the order the policies first appear) and summarises each group.
std::vector<PolicySummary> Summarize(const std::vector<RunResult>& runs, double inflate);

}  // namespace fgpu::simulate
