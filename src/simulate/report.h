// Rendering per-policy summaries: the terminal table, the JSON summary (one object per
// policy; docs/placement.md lists the fields) and the per-arrival curves as CSV.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "simulate/authors.h"
#include "simulate/summary.h"

namespace fgpu::simulate {

struct ReportInfo {
  std::string nodes_path;
  std::string pods_path;
  int nodes = 0;
  int64_t gpus = 0;
  int64_t pods = 0;
  int never_fit = 0;
  std::vector<uint64_t> seeds;
  double inflate = 1.3;
  const AuthorsResults* authors = nullptr;  // optional: their numbers beside ours
};

// "42-51" / "1,3,5-7".
std::string FormatSeeds(const std::vector<uint64_t>& seeds);
// `text` padded with spaces to `width` columns, on the left unless `left_align`.
std::string Pad(const std::string& text, size_t width, bool left_align = false);

std::string RenderTable(const std::vector<PolicySummary>& summaries, const ReportInfo& info);
nlohmann::ordered_json SummaryJson(const std::vector<PolicySummary>& summaries, const ReportInfo& info);
// policy,arrived_pct,unallocated_mean,unallocated_min,unallocated_max
std::string RenderCurvesCsv(const std::vector<PolicySummary>& summaries);

}  // namespace fgpu::simulate
