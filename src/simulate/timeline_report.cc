#include "simulate/timeline_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <mutex>
#include <thread>

#include "simulate/authors.h"
#include "simulate/plan.h"
#include "simulate/report.h"

namespace fgpu::simulate {
namespace {

constexpr const char* kTierNames[] = {"batch", "standard", "latency"};
constexpr const char* kTimelineColors[] = {"#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"};
constexpr const char* kTimelineDashes[] = {"6,3", "2,2", "8,3,2,3", "", "4,4", "1,3"};

std::string Fixed(double value, int digits) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

// Seconds as "42 s", "7.5 min" or "3.2 h".
std::string Duration(double seconds) {
  if (seconds < 120) return Fixed(seconds, 0) + " s";
  if (seconds < 7200) return Fixed(seconds / 60, 1) + " min";
  return Fixed(seconds / 3600, 1) + " h";
}

const TimedSummary* Find(const std::vector<TimedSummary>& summaries, double load, const std::string& baseline) {
  for (const TimedSummary& summary : summaries) {
    if (summary.load == load && summary.baseline == baseline) return &summary;
  }
  return nullptr;
}

std::string Verdict(bool pass) { return pass ? "PASS" : "MISS"; }

}  // namespace

std::vector<TimedSummary> SummarizeTimed(const std::vector<TimedResult>& runs) {
  std::vector<TimedSummary> summaries;
  std::map<std::pair<double, std::string>, size_t> index;
  std::vector<std::vector<const TimedResult*>> groups;
  for (const TimedResult& run : runs) {
    const auto [found, added] = index.try_emplace({run.load, run.baseline}, groups.size());
    if (added) groups.emplace_back();
    groups[found->second].push_back(&run);
  }
  for (const std::vector<const TimedResult*>& group : groups) {
    TimedSummary summary;
    summary.baseline = group.front()->baseline;
    summary.load = group.front()->load;
    summary.runs = static_cast<int>(group.size());
    const double n = static_cast<double>(group.size());
    double lost = 0;
    double delivered = 0;
    double decisions = 0;
    double seconds = 0;
    for (const TimedResult* run : group) {
      for (size_t t = 0; t < run->tiers.size(); ++t) {
        TierResult& tier = summary.tiers[t];
        const TierResult& one = run->tiers[t];
        tier.pods += one.pods;
        tier.started += one.started;
        tier.never_started += one.never_started;
        tier.delay_p50 += one.delay_p50 / n;
        tier.delay_p99 += one.delay_p99 / n;
        tier.completed_gpu_hours += one.completed_gpu_hours / n;
        tier.preempted += one.preempted;
        tier.lost_gpu_hours += one.lost_gpu_hours / n;
        summary.preemptions += static_cast<double>(one.preempted) / n;
      }
      summary.allocated_mean += run->allocated_mean / n;
      summary.jain += (run->jain - 1) / n;  // starts at 1
      summary.saturated_tenants += run->saturated_tenants / n;
      summary.max_over_limit = std::max(summary.max_over_limit, run->max_over_limit);
      summary.arrivals += static_cast<double>(run->arrivals) / n;
      lost += run->lost_gpu_hours;
      delivered += run->delivered_gpu_hours;
      decisions += static_cast<double>(run->decisions);
      seconds += run->schedule_seconds;
      if (summary.samples.empty()) summary.samples.assign(run->samples.size(), Sample{});
      for (size_t i = 0; i < run->samples.size() && i < summary.samples.size(); ++i) {
        summary.samples[i].time = run->samples[i].time;
        summary.samples[i].allocated += run->samples[i].allocated / n;
        summary.samples[i].queued += run->samples[i].queued;
      }
      if (summary.tenants.empty()) {
        for (const TenantResult& tenant : run->tenants) summary.tenants.push_back({tenant.name, tenant.nominal, tenant.limit, 0, 0, 0});
      }
      for (size_t i = 0; i < run->tenants.size() && i < summary.tenants.size(); ++i) {
        summary.tenants[i].share += run->tenants[i].share / n;
        summary.tenants[i].peak = std::max(summary.tenants[i].peak, run->tenants[i].peak);
        summary.tenants[i].saturated += run->tenants[i].saturated / n;
      }
    }
    for (TierResult& tier : summary.tiers) {
      tier.pods = std::llround(static_cast<double>(tier.pods) / n);
      tier.started = std::llround(static_cast<double>(tier.started) / n);
      tier.never_started = std::llround(static_cast<double>(tier.never_started) / n);
      tier.preempted = std::llround(static_cast<double>(tier.preempted) / n);
    }
    for (Sample& sample : summary.samples) sample.queued = std::llround(static_cast<double>(sample.queued) / n);
    summary.lost_fraction = delivered > 0 ? lost / delivered : 0;
    summary.decisions_per_second = seconds > 0 ? decisions / seconds : 0;
    summaries.push_back(std::move(summary));
  }
  return summaries;
}

std::vector<std::string> JudgeBars(const std::vector<TimedSummary>& summaries, double load) {
  const TimedSummary* ours = Find(summaries, load, "fgpu");
  const TimedSummary* fifo = Find(summaries, load, "fifo");
  if (ours == nullptr || fifo == nullptr) return {};
  const auto latency = static_cast<size_t>(sched::Tier::kLatency);
  const double bar = fifo->tiers[latency].delay_p99 / 10;
  std::vector<std::string> lines;
  lines.push_back(Verdict(ours->tiers[latency].delay_p99 <= bar) + "  LS p99 queueing delay " +
                  Duration(ours->tiers[latency].delay_p99) + " ≤ fifo's " + Duration(fifo->tiers[latency].delay_p99) +
                  " / 10 = " + Duration(bar));
  lines.push_back(Verdict(ours->allocated_mean >= fifo->allocated_mean - 0.02) + "  allocated GPU " +
                  Fixed(100 * ours->allocated_mean, 1) + " % ≥ fifo's " + Fixed(100 * fifo->allocated_mean, 1) +
                  " % − 2 points");
  lines.push_back(Verdict(ours->max_over_limit <= 1e-9) + "  no tenant above its quota + borrowing limit (worst: " +
                  Fixed(100 * ours->max_over_limit, 2) + " points of the cluster above)");
  lines.push_back(Verdict(ours->jain >= 0.95) + "  Jain's index of share/quota over saturated tenants " +
                  Fixed(ours->jain, 3) + " ≥ 0.95 (" + Fixed(ours->saturated_tenants, 1) + " tenants saturated)");
  lines.push_back(Verdict(ours->lost_fraction <= 0.02) + "  GPU-hours lost to preemption " +
                  Fixed(100 * ours->lost_fraction, 2) + " % ≤ 2 % of those delivered");
  return lines;
}

std::string RenderTimedTable(const std::vector<TimedSummary>& summaries, const TimedReportInfo& info) {
  std::string out = "fgpu simulate --time: " + TraceName(info.pods_path) + " on " + std::to_string(info.nodes) +
                    " nodes (" + std::to_string(info.gpus) + " GPUs), seeds " + FormatSeeds(info.seeds) + "\n";
  out += "window " + Duration(info.window) + " of arrivals (the first " + Duration(info.warmup) +
         " not measured), then " + Duration(info.drain) + " of drain; tenants " + std::to_string(info.tenants.orgs) +
         " orgs × " + std::to_string(info.tenants.teams_per_org) + " teams, Zipf " + Fixed(info.tenants.zipf, 2) +
         ", quotas " + (info.tenants.equal_quotas ? "equal" : "by expected demand") + ", borrowing limit " +
         Fixed(info.tenants.borrowing, 2) + " × nominal\n";
  std::vector<double> loads;
  for (const TimedSummary& summary : summaries) {
    if (std::find(loads.begin(), loads.end(), summary.load) == loads.end()) loads.push_back(summary.load);
  }
  for (double load : loads) {
    out += "\nload " + Fixed(load, 2) + "\n";
    out += Pad("baseline", 11, true) + Pad("runs", 5) + Pad("LS p50", 9) + Pad("LS p99", 10) + Pad("std p99", 10) +
           Pad("BE p99", 10) + Pad("never LS/std/BE", 17) + Pad("alloc %", 9) + Pad("done GPU-h LS/std/BE", 22) +
           Pad("preempt", 9) + Pad("lost %", 8) + Pad("Jain (sat)", 12) + Pad("over lim", 10) + Pad("dec/s", 9) + "\n";
    for (const TimedSummary& s : summaries) {
      if (s.load != load) continue;
      const TierResult& ls = s.tiers[2];
      const TierResult& std_tier = s.tiers[1];
      const TierResult& be = s.tiers[0];
      out += Pad(s.baseline, 11, true) + Pad(std::to_string(s.runs), 5) + Pad(Duration(ls.delay_p50), 9) +
             Pad(Duration(ls.delay_p99), 10) + Pad(Duration(std_tier.delay_p99), 10) + Pad(Duration(be.delay_p99), 10) +
             Pad(std::to_string(ls.never_started) + "/" + std::to_string(std_tier.never_started) + "/" +
                     std::to_string(be.never_started),
                 17) +
             Pad(Fixed(100 * s.allocated_mean, 1), 9) +
             Pad(Fixed(ls.completed_gpu_hours, 0) + "/" + Fixed(std_tier.completed_gpu_hours, 0) + "/" +
                     Fixed(be.completed_gpu_hours, 0),
                 22) +
             Pad(Fixed(s.preemptions, 0), 9) + Pad(Fixed(100 * s.lost_fraction, 2), 8) +
             Pad(Fixed(s.jain, 3) + " (" + Fixed(s.saturated_tenants, 1) + ")", 12) +
             Pad(Fixed(100 * s.max_over_limit, 2), 10) + Pad(Fixed(s.decisions_per_second, 0), 9) + "\n";
    }
    const std::vector<std::string> bars = JudgeBars(summaries, load);
    if (!bars.empty()) {
      out += "issue 16's bars at load " + Fixed(load, 2) + " (fgpu against fifo of the same runs):\n";
      for (const std::string& line : bars) out += "  " + line + "\n";
    }
    if (const TimedSummary* ours = Find(summaries, load, "fgpu"); ours != nullptr && !ours->tenants.empty()) {
      out += "fgpu's tenants at load " + Fixed(load, 2) + " (share and quota as % of the cluster's GPUs):\n";
      for (const TenantResult& tenant : ours->tenants) {
        out += "  " + Pad(tenant.name, 12, true) + " quota " + Pad(Fixed(100 * tenant.nominal, 1), 5) + "  limit " +
               Pad(Fixed(100 * tenant.limit, 1), 5) + "  share " + Pad(Fixed(100 * tenant.share, 1), 5) + "  peak " +
               Pad(Fixed(100 * tenant.peak, 1), 5) + "  waiting " + Pad(Fixed(100 * tenant.saturated, 0), 3) +
               " % of the time\n";
      }
    }
  }
  return out;
}

nlohmann::ordered_json TimedJson(const std::vector<TimedSummary>& summaries, const TimedReportInfo& info) {
  nlohmann::ordered_json out;
  out["nodes"] = info.nodes_path;
  out["pods"] = info.pods_path;
  out["gpus"] = info.gpus;
  out["seeds"] = info.seeds;
  out["window_seconds"] = info.window;
  out["warmup_seconds"] = info.warmup;
  out["drain_seconds"] = info.drain;
  out["tenants"] = {{"orgs", info.tenants.orgs},
                    {"teams_per_org", info.tenants.teams_per_org},
                    {"zipf", info.tenants.zipf},
                    {"borrowing", info.tenants.borrowing},
                    {"equal_quotas", info.tenants.equal_quotas}};
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const TimedSummary& s : summaries) {
    nlohmann::ordered_json row;
    row["load"] = s.load;
    row["baseline"] = s.baseline;
    row["runs"] = s.runs;
    for (size_t t = 0; t < s.tiers.size(); ++t) {
      const TierResult& tier = s.tiers[t];
      row["tiers"][kTierNames[t]] = {{"pods", tier.pods},
                                     {"started", tier.started},
                                     {"never_started", tier.never_started},
                                     {"delay_p50_seconds", tier.delay_p50},
                                     {"delay_p99_seconds", tier.delay_p99},
                                     {"completed_gpu_hours", tier.completed_gpu_hours},
                                     {"preempted", tier.preempted},
                                     {"lost_gpu_hours", tier.lost_gpu_hours}};
    }
    row["allocated_fraction"] = s.allocated_mean;
    row["preemptions"] = s.preemptions;
    row["lost_fraction"] = s.lost_fraction;
    row["jain"] = s.jain;
    row["saturated_tenants"] = s.saturated_tenants;
    row["max_over_limit"] = s.max_over_limit;
    row["decisions_per_second"] = s.decisions_per_second;
    for (const TenantResult& tenant : s.tenants) {
      row["tenant_shares"].push_back({{"tenant", tenant.name},
                                      {"quota", tenant.nominal},
                                      {"limit", tenant.limit},
                                      {"share", tenant.share},
                                      {"peak", tenant.peak},
                                      {"waiting", tenant.saturated}});
    }
    const std::vector<std::string> bars = JudgeBars(summaries, s.load);
    if (s.baseline == "fgpu" && !bars.empty()) row["bars"] = bars;
    rows.push_back(std::move(row));
  }
  out["results"] = std::move(rows);
  return out;
}

std::string RenderTimedSvg(const std::vector<TimedSummary>& summaries, double load, const std::string& title) {
  std::vector<const TimedSummary*> lines;
  double hours = 1;
  double most_queued = 1;
  for (const TimedSummary& s : summaries) {
    if (s.load != load || s.samples.empty()) continue;
    lines.push_back(&s);
    hours = std::max(hours, s.samples.back().time / 3600);
    for (const Sample& sample : s.samples) most_queued = std::max(most_queued, static_cast<double>(sample.queued));
  }
  const double left = 70;
  const double width = 640;
  const double height = 200;
  const auto x = [&](double seconds) { return left + seconds / 3600 / hours * width; };
  std::string out = "<svg xmlns='http://www.w3.org/2000/svg' width='800' height='560' font-family='sans-serif' "
                    "font-size='12'>\n<rect width='800' height='560' fill='white'/>\n<text x='400' y='20' "
                    "text-anchor='middle' font-size='14'>" +
                    title + "</text>\n";
  struct PanelSpec {
    double top;
    const char* caption;
    double most;
    bool queue;
  };
  for (const PanelSpec& panel : {PanelSpec{40, "allocated GPU % (higher is better)", 100, false},
                                 PanelSpec{300, "requests waiting (lower is better)", most_queued, true}}) {
    out += "<rect x='" + Fixed(left, 0) + "' y='" + Fixed(panel.top, 0) + "' width='" + Fixed(width, 0) +
           "' height='" + Fixed(height, 0) + "' fill='none' stroke='#444'/>\n";
    out += "<text x='" + Fixed(left, 0) + "' y='" + Fixed(panel.top - 6, 0) + "'>" + panel.caption + "</text>\n";
    for (int tick = 0; tick <= 4; ++tick) {
      const double value = panel.most * tick / 4;
      const double y = panel.top + height - height * tick / 4;
      out += "<text x='" + Fixed(left - 6, 0) + "' y='" + Fixed(y + 4, 0) + "' text-anchor='end'>" +
             Fixed(value, 0) + "</text>\n";
    }
    for (int hour = 0; hour <= static_cast<int>(hours); hour += std::max(1, static_cast<int>(hours) / 8)) {
      out += "<text x='" + Fixed(x(hour * 3600.0), 0) + "' y='" + Fixed(panel.top + height + 16, 0) +
             "' text-anchor='middle'>" + std::to_string(hour) + " h</text>\n";
    }
    for (size_t i = 0; i < lines.size(); ++i) {
      std::string points;
      for (const Sample& sample : lines[i]->samples) {
        const double value = panel.queue ? static_cast<double>(sample.queued) : 100 * sample.allocated;
        const double y = panel.top + height - height * std::clamp(value / panel.most, 0.0, 1.0);
        points += Fixed(x(sample.time), 1) + "," + Fixed(y, 1) + " ";
      }
      out += "<polyline fill='none' stroke='" + std::string(kTimelineColors[i % 6]) + "' stroke-width='2' stroke-dasharray='" +
             kTimelineDashes[i % 6] + "' points='" + points + "'/>\n";
    }
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    const double y = 540;
    const double at = left + static_cast<double>(i) * 160;
    out += "<line x1='" + Fixed(at, 0) + "' y1='" + Fixed(y - 4, 0) + "' x2='" + Fixed(at + 30, 0) + "' y2='" +
           Fixed(y - 4, 0) + "' stroke='" + kTimelineColors[i % 6] + "' stroke-width='2' stroke-dasharray='" + kTimelineDashes[i % 6] +
           "'/><text x='" + Fixed(at + 36, 0) + "' y='" + Fixed(y, 0) + "'>" + lines[i]->baseline + "</text>\n";
  }
  out += "</svg>\n";
  return out;
}

Result<std::vector<TimedResult>> RunTimed(const Scenario& scenario, const std::vector<TimedSpec>& specs, int jobs,
                                          Progress& progress) {
  progress.runs_total = static_cast<int>(specs.size());
  int64_t arrivals = 0;
  for (const TimedSpec& spec : specs) {
    Result<ArrivalPlan> plan = PlanArrivals(scenario.pods, scenario.cluster.total_gpu_milli(), spec.load, spec.window);
    if (!plan.ok()) return plan.status();
    arrivals += static_cast<int64_t>(plan->arrivals.size());
  }
  progress.pods_total = arrivals;
  std::vector<std::optional<Result<TimedResult>>> results(specs.size());
  std::atomic<size_t> next{0};
  std::mutex failed_mutex;
  std::atomic<bool> failed{false};
  const auto work = [&] {
    while (!failed.load()) {
      const size_t index = next.fetch_add(1);
      if (index >= specs.size()) return;
      results[index] = ReplayInTime(scenario, specs[index], &progress.pods_done);
      if (!results[index]->ok()) failed = true;
      ++progress.runs_done;
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < std::clamp(jobs, 1, 64); ++i) threads.emplace_back(work);
  for (std::thread& thread : threads) thread.join();
  std::vector<TimedResult> out;
  for (std::optional<Result<TimedResult>>& result : results) {
    if (!result) continue;
    if (!result->ok()) return result->status();
    out.push_back(std::move(**result));
  }
  if (out.size() != specs.size()) return Status::Internal("a run did not finish");
  return out;
}

}  // namespace fgpu::simulate
