// Time-driven runs reduced per (load, baseline) over seeds, and rendered: the table with every
// metric per baseline, issue 16's bars judged against the baselines of the same run, JSON, and
// an SVG of allocation and queue length over time (docs/governance.md "The simulation").
#pragma once

#include <array>
#include <atomic>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulate/runner.h"
#include "simulate/timeline.h"

namespace fgpu::simulate {

struct TimedSummary {
  std::string baseline;
  double load = 0;
  int runs = 0;
  std::array<TierResult, sched::kTierCount> tiers{};  // means over the runs (counts rounded)
  double allocated_mean = 0;
  double jain = 1;
  double saturated_tenants = 0;
  double max_over_limit = 0;  // the worst run's
  double lost_fraction = 0;   // lost / delivered GPU-hours, over all runs
  double preemptions = 0;
  double decisions_per_second = 0;  // Governor decisions over its wall time
  double arrivals = 0;
  std::vector<Sample> samples;         // means per sample index
  std::vector<TenantResult> tenants;   // means
};

// Grouped by load then baseline, in the order first met.
std::vector<TimedSummary> SummarizeTimed(const std::vector<TimedResult>& runs);

struct TimedReportInfo {
  std::string nodes_path{};
  std::string pods_path{};
  int nodes = 0;
  int64_t gpus = 0;
  std::vector<uint64_t> seeds{};
  double window = 0;
  double warmup = 0;
  double drain = 0;
  TenantModel tenants{};
};

// One line per issue 16 bar at `load`, comparing "fgpu" with the baselines: PASS or MISS and the
// figures. Empty when the run lacks a baseline a bar needs.
std::vector<std::string> JudgeBars(const std::vector<TimedSummary>& summaries, double load);

std::string RenderTimedTable(const std::vector<TimedSummary>& summaries, const TimedReportInfo& info);
nlohmann::ordered_json TimedJson(const std::vector<TimedSummary>& summaries, const TimedReportInfo& info);
// Allocation and queue length over time at one load, a line per baseline.
std::string RenderTimedSvg(const std::vector<TimedSummary>& summaries, double load, const std::string& title);

// Runs every spec on `jobs` threads; results in spec order. progress.pods_* count arrivals.
Result<std::vector<TimedResult>> RunTimed(const Scenario& scenario, const std::vector<TimedSpec>& specs, int jobs,
                                          Progress& progress);

}  // namespace fgpu::simulate
