#include "simulate/summary.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fgpu::simulate {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Unallocated(const ArrivalCurve& curve, int arrived_pct) {
  const std::optional<double> allocated = curve.AllocatedAt(arrived_pct);
  return allocated ? 100.0 - *allocated : kNaN;
}

double ShortfallOver1Pct(const ArrivalCurve& curve) {
  for (int arrived = 0; arrived <= curve.last_bin(); ++arrived) {
    const std::optional<double> allocated = curve.AllocatedAt(arrived);
    if (allocated && arrived - *allocated > 1.0) return arrived;
  }
  return kNaN;
}

double Percentile(std::vector<uint32_t>& values, double fraction) {
  if (values.empty()) return kNaN;
  const auto rank = static_cast<size_t>(fraction * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(rank), values.end());
  return values[rank];
}

void AddLatencies(const std::vector<const RunResult*>& runs, PolicySummary& summary) {
  std::vector<uint32_t> latencies;
  double seconds = 0;
  for (const RunResult* run : runs) {
    latencies.insert(latencies.end(), run->latency_ns.begin(), run->latency_ns.end());
    seconds += run->decision_seconds;
  }
  summary.decisions_per_sec = seconds > 0 ? static_cast<double>(latencies.size()) / seconds : kNaN;
  summary.p50_decision_us = Percentile(latencies, 0.50) / 1000;
  summary.p99_decision_us = Percentile(latencies, 0.99) / 1000;
  summary.max_decision_us =
      latencies.empty() ? kNaN : *std::max_element(latencies.begin(), latencies.end()) / 1000.0;
}

void AddCurve(const std::vector<const RunResult*>& runs, PolicySummary& summary) {
  for (int arrived = 0; arrived <= summary.end_pct; ++arrived) {
    std::vector<double> values;
    for (const RunResult* run : runs) {
      const double unallocated = Unallocated(run->curve, arrived);
      if (!std::isnan(unallocated)) values.push_back(unallocated);
    }
    if (!values.empty()) summary.curve.push_back({arrived, StatOf(values)});
  }
}

PolicySummary SummarizePolicy(const std::vector<const RunResult*>& runs, int end_pct) {
  PolicySummary summary;
  summary.policy = runs.front()->policy;
  summary.end_pct = end_pct;
  std::vector<double> at_100, at_end, fragment_80, fragment_100, shortfall, arrivals, failed;
  const auto keep = [](std::vector<double>& into, double value) {
    if (!std::isnan(value)) into.push_back(value);
  };
  for (const RunResult* run : runs) {
    const double unallocated_100 = Unallocated(run->curve, 100);
    const double unallocated_end = Unallocated(run->curve, end_pct);
    keep(at_100, unallocated_100);
    keep(at_end, unallocated_end);
    keep(fragment_80, run->curve.FragmentAt(80).value_or(kNaN));
    keep(fragment_100, run->curve.FragmentAt(100).value_or(kNaN));
    keep(shortfall, ShortfallOver1Pct(run->curve));
    arrivals.push_back(static_cast<double>(run->arrivals));
    failed.push_back(static_cast<double>(run->failed));
    summary.seeds.push_back({run->seed, unallocated_100, unallocated_end, run->arrivals, run->failed});
  }
  summary.unallocated_at_100 = StatOf(at_100);
  summary.unallocated_at_end = StatOf(at_end);
  summary.fragment_at_80 = StatOf(fragment_80);
  summary.fragment_at_100 = StatOf(fragment_100);
  summary.shortfall_over_1pct_at = StatOf(shortfall);
  summary.arrivals = StatOf(arrivals);
  summary.failed = StatOf(failed);
  AddLatencies(runs, summary);
  AddCurve(runs, summary);
  return summary;
}

}  // namespace

SeedStat StatOf(const std::vector<double>& values) {
  if (values.empty()) return {kNaN, kNaN, kNaN, 0};
  SeedStat stat{0, values.front(), values.front(), static_cast<int>(values.size())};
  for (double value : values) {
    stat.mean += value;
    stat.min = std::min(stat.min, value);
    stat.max = std::max(stat.max, value);
  }
  stat.mean /= static_cast<double>(values.size());
  return stat;
}

std::vector<PolicySummary> Summarize(const std::vector<RunResult>& runs, double inflate) {
  const int end_pct = inflate > 0 ? static_cast<int>(std::lround(inflate * 100)) : 100;
  std::vector<std::string> order;
  for (const RunResult& run : runs) {
    if (std::find(order.begin(), order.end(), run.policy) == order.end()) order.push_back(run.policy);
  }
  std::vector<PolicySummary> summaries;
  for (const std::string& policy : order) {
    std::vector<const RunResult*> group;
    for (const RunResult& run : runs) {
      if (run.policy == policy) group.push_back(&run);
    }
    summaries.push_back(SummarizePolicy(group, end_pct));
  }
  return summaries;
}

}  // namespace fgpu::simulate
