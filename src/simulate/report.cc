#include "simulate/report.h"

#include <cmath>
#include <cstdio>
#include <optional>

namespace fgpu::simulate {

namespace {

std::string Format(const char* format, double value) {
  if (std::isnan(value)) return "-";
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

std::string StatCell(const SeedStat& stat) {
  if (stat.n == 0) return "-";
  return Format("%.2f", stat.mean) + " (" + Format("%.2f", stat.min) + "-" + Format("%.2f", stat.max) + ")";
}

// Thousands separators for throughput ("12,345").
std::string Grouped(double value) {
  if (std::isnan(value)) return "-";
  std::string digits = std::to_string(std::llround(value));
  for (int position = static_cast<int>(digits.size()) - 3; position > 0; position -= 3) {
    digits.insert(static_cast<size_t>(position), ",");
  }
  return digits;
}

nlohmann::ordered_json Number(double value) {
  if (std::isnan(value)) return nullptr;
  return std::round(value * 1e4) / 1e4;
}

nlohmann::ordered_json StatJson(const SeedStat& stat) {
  return {{"mean", Number(stat.mean)}, {"min", Number(stat.min)}, {"max", Number(stat.max)}, {"n", stat.n}};
}

std::optional<SeedStat> Authors(const ReportInfo& info, const std::string& policy, int arrived_pct) {
  if (info.authors == nullptr) return std::nullopt;
  return info.authors->Unallocated(TraceName(info.pods_path), policy, arrived_pct);
}

}  // namespace

std::string FormatSeeds(const std::vector<uint64_t>& seeds) {
  std::string text;
  for (size_t first = 0; first < seeds.size();) {
    size_t last = first;
    while (last + 1 < seeds.size() && seeds[last + 1] == seeds[last] + 1) ++last;
    if (!text.empty()) text += ",";
    text += std::to_string(seeds[first]);
    if (last > first) text += "-" + std::to_string(seeds[last]);
    first = last + 1;
  }
  return text;
}

std::string RenderTable(const std::vector<PolicySummary>& summaries, const ReportInfo& info) {
  const int end_pct = summaries.empty() ? 130 : summaries.front().end_pct;
  std::string out = "fgpu simulate: " + std::to_string(info.nodes) + " nodes (" + std::to_string(info.gpus) +
                    " GPUs) from " + info.nodes_path + "\n               " + std::to_string(info.pods) +
                    " pods from " + info.pods_path + "\n               seeds " + FormatSeeds(info.seeds) +
                    ", inflate " + Format("%.2f", info.inflate) +
                    "; unallocated and fragmentation in % of cluster GPU," + " mean (min-max) over seeds\n";
  if (info.never_fit > 0) {
    out += "               " + std::to_string(info.never_fit) +
           " pods can never be placed (they arrive and fail)\n";
  }
  const bool with_authors = info.authors != nullptr;
  out += "\n" + Pad("policy", 14, true) + Pad("unalloc@100", 22) +
         Pad("unalloc@" + std::to_string(end_pct), 22) + (with_authors ? Pad("authors@100", 13) : "") +
         Pad("frag@80", 9) + Pad("frag@100", 10) + Pad("failed", 9) + Pad("decisions/s", 13) +
         Pad("p50 us", 9) + Pad("p99 us", 9) + "\n";
  for (const PolicySummary& summary : summaries) {
    std::string authors_cell;
    if (with_authors) {
      const std::optional<SeedStat> theirs = Authors(info, summary.policy, 100);
      authors_cell = Pad(theirs ? Format("%.2f", theirs->mean) : "-", 13);
    }
    out += Pad(summary.policy, 14, true) + Pad(StatCell(summary.unallocated_at_100), 22) +
           Pad(StatCell(summary.unallocated_at_end), 22) + authors_cell +
           Pad(Format("%.2f", summary.fragment_at_80.mean), 9) +
           Pad(Format("%.2f", summary.fragment_at_100.mean), 10) +
           Pad(Format("%.0f", summary.failed.mean), 9) + Pad(Grouped(summary.decisions_per_sec), 13) +
           Pad(Format("%.1f", summary.p50_decision_us), 9) + Pad(Format("%.1f", summary.p99_decision_us), 9) +
           "\n";
  }
  return out;
}

nlohmann::ordered_json SummaryJson(const std::vector<PolicySummary>& summaries, const ReportInfo& info) {
  nlohmann::ordered_json policies = nlohmann::ordered_json::array();
  for (const PolicySummary& summary : summaries) {
    nlohmann::ordered_json policy;
    policy["policy"] = summary.policy;
    policy["unallocated_pct_at_100"] = Number(summary.unallocated_at_100.mean);
    policy["unallocated_pct_at_130"] =
        summary.end_pct == 130 ? Number(summary.unallocated_at_end.mean) : nlohmann::ordered_json(nullptr);
    policy["decisions_per_sec"] = Number(summary.decisions_per_sec);
    policy["p50_decision_us"] = Number(summary.p50_decision_us);
    policy["p99_decision_us"] = Number(summary.p99_decision_us);
    policy["max_decision_us"] = Number(summary.max_decision_us);
    policy["end_pct"] = summary.end_pct;
    policy["unallocated_pct_at_100_stats"] = StatJson(summary.unallocated_at_100);
    policy["unallocated_pct_at_end_stats"] = StatJson(summary.unallocated_at_end);
    policy["fragmentation_pct_at_80"] = StatJson(summary.fragment_at_80);
    policy["fragmentation_pct_at_100"] = StatJson(summary.fragment_at_100);
    policy["shortfall_over_1pct_at_arrived_pct"] = StatJson(summary.shortfall_over_1pct_at);
    policy["arrivals"] = StatJson(summary.arrivals);
    policy["failed_pods"] = StatJson(summary.failed);
    if (std::optional<SeedStat> theirs = Authors(info, summary.policy, 100)) {
      policy["authors_unallocated_pct_at_100"] = StatJson(*theirs);
    }
    if (std::optional<SeedStat> theirs = Authors(info, summary.policy, summary.end_pct)) {
      policy["authors_unallocated_pct_at_end"] = StatJson(*theirs);
    }
    nlohmann::ordered_json seeds = nlohmann::ordered_json::array();
    for (const SeedResult& seed : summary.seeds) {
      seeds.push_back({{"seed", seed.seed},
                       {"unallocated_pct_at_100", Number(seed.unallocated_at_100)},
                       {"unallocated_pct_at_end", Number(seed.unallocated_at_end)},
                       {"arrivals", seed.arrivals},
                       {"failed_pods", seed.failed}});
    }
    policy["per_seed"] = std::move(seeds);
    policy["trace"] = {{"nodes", info.nodes_path},         {"pods", info.pods_path},
                       {"node_count", info.nodes},         {"gpu_count", info.gpus},
                       {"pod_count", info.pods},           {"never_fit", info.never_fit},
                       {"seeds", FormatSeeds(info.seeds)}, {"inflate", info.inflate}};
    policies.push_back(std::move(policy));
  }
  return policies;
}

std::string RenderCurvesCsv(const std::vector<PolicySummary>& summaries) {
  std::string out = "policy,arrived_pct,unallocated_mean,unallocated_min,unallocated_max\n";
  for (const PolicySummary& summary : summaries) {
    for (const CurvePoint& point : summary.curve) {
      out += summary.policy + "," + std::to_string(point.arrived_pct) + "," +
             Format("%.4f", point.unallocated_pct.mean) + "," + Format("%.4f", point.unallocated_pct.min) +
             "," + Format("%.4f", point.unallocated_pct.max) + "\n";
    }
  }
  return out;
}

std::string Pad(const std::string& text, size_t width, bool left_align) {
  if (text.size() >= width) return text;
  const std::string fill(width - text.size(), ' ');
  return left_align ? text + fill : fill + text;
}

}  // namespace fgpu::simulate
