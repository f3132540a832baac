// fgpu simulate --time: governance in time — the trace's arrivals and departures through the
// Governor under each baseline × load × seed, reported as a table (or JSON) with issue 16's
// bars, and under --out as table.txt, summary.json and one timeline SVG per load.
// docs/governance.md "The simulation".
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/progress_bar.h"
#include "simulate/simulate.h"
#include "simulate/timeline_report.h"

namespace fgpu::cli {
namespace {

Result<std::vector<double>> ParseLoads(const std::string& text) {
  std::vector<double> loads;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    char* rest = nullptr;
    const double load = std::strtod(item.c_str(), &rest);
    if (item.empty() || rest == nullptr || *rest != '\0' || !(load > 0 && load <= 10)) {
      return Status::InvalidArgument("--load takes loads in (0, 10], comma-separated, not '" + item + "'");
    }
    loads.push_back(load);
    start = end + 1;
  }
  return loads;
}

Result<simulate::TenantModel> ParseTenants(const SimulateOptions& options) {
  simulate::TenantModel model;
  int orgs = 0;
  int teams = 0;
  char extra = 0;
  if (std::sscanf(options.tenants.c_str(), "%dx%d%c", &orgs, &teams, &extra) != 2 || orgs < 1 || orgs > 16 ||
      teams < 1 || teams > 16) {
    return Status::InvalidArgument("--tenants takes ORGSxTEAMS, each 1..16, like 2x4, not '" + options.tenants + "'");
  }
  model.orgs = orgs;
  model.teams_per_org = teams;
  model.zipf = options.zipf;
  model.borrowing = options.borrowing;
  model.equal_quotas = options.equal_quotas;
  if (Status valid = simulate::Validate(model); !valid.ok()) return Status::InvalidArgument("--tenants: " + valid.message());
  return model;
}

Result<std::vector<simulate::TimedSpec>> ParseSpecs(const SimulateOptions& options, simulate::TenantModel* model) {
  Result<std::vector<double>> loads = ParseLoads(options.loads);
  if (!loads.ok()) return loads.status();
  Result<std::vector<simulate::Baseline>> baselines = simulate::ParseBaselines(options.baselines);
  if (!baselines.ok()) return Status::InvalidArgument("--baselines: " + baselines.status().message());
  Result<std::vector<uint64_t>> seeds = simulate::ParseSeeds(options.seeds);
  if (!seeds.ok()) return seeds.status();
  Result<simulate::TenantModel> tenants = ParseTenants(options);
  if (!tenants.ok()) return tenants.status();
  *model = *tenants;
  std::string policy = options.policy == "all" ? "FGD+" : options.policy;
  Result<std::vector<std::string>> policies = simulate::ParsePolicies(policy);
  if (!policies.ok()) return policies.status();
  if (policies->size() != 1) return Status::InvalidArgument("--time places with one --policy (default FGD+)");
  std::vector<simulate::TimedSpec> specs;
  for (double load : *loads) {
    for (const simulate::Baseline& baseline : *baselines) {
      for (uint64_t seed : *seeds) {
        simulate::TimedSpec spec;
        spec.baseline = baseline;
        spec.seed = seed;
        spec.load = load;
        spec.policy = policies->front();
        spec.tenants = *tenants;
        spec.window = options.window_hours * 3600;
        spec.warmup = options.warmup_hours * 3600;
        spec.drain = options.drain_hours * 3600;
        specs.push_back(std::move(spec));
      }
    }
  }
  if (!specs.empty()) {  // every spec shares these: one check names the bad flag
    const simulate::TimedSpec& first = specs.front();
    if (!(first.window >= 60)) return Status::InvalidArgument("--window must be at least a minute");
    if (!(first.warmup >= 0 && first.warmup < first.window)) {
      return Status::InvalidArgument("--warmup must be ≥ 0 and shorter than --window");
    }
    if (!(first.drain >= 0)) return Status::InvalidArgument("--drain must be ≥ 0");
  }
  return specs;
}

Status WriteTimedOutputs(const SimulateOptions& options, const std::vector<simulate::TimedSummary>& summaries,
                         const simulate::TimedReportInfo& info) {
  const std::filesystem::path dir(options.out);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return Status::Unavailable("cannot create " + dir.string() + ": " + error.message());
  if (Status written = WriteFile(dir / "table.txt", simulate::RenderTimedTable(summaries, info)); !written.ok()) return written;
  if (Status written = WriteFile(dir / "summary.json", simulate::TimedJson(summaries, info).dump(2) + "\n");
      !written.ok()) {
    return written;
  }
  std::vector<double> loads;
  for (const simulate::TimedSummary& summary : summaries) {
    if (std::find(loads.begin(), loads.end(), summary.load) == loads.end()) loads.push_back(summary.load);
  }
  for (double load : loads) {
    char name[64];
    std::snprintf(name, sizeof name, "timeline-load-%.2f.svg", load);
    const std::string title = simulate::TraceName(options.pods) + ", load " + std::to_string(load).substr(0, 4) +
                              ", seeds " + simulate::FormatSeeds(info.seeds) + " (mean)";
    if (Status written = WriteFile(dir / name, simulate::RenderTimedSvg(summaries, load, title)); !written.ok()) return written;
  }
  std::cerr << "fgpu simulate: wrote table.txt, summary.json and timeline-load-*.svg to " << dir.string() << "\n";
  return Status::Ok();
}

}  // namespace

int RunSimulateInTime(const SimulateOptions& options) {
  if (options.format != "table" && options.format != "json") {
    std::cerr << "fgpu simulate: --format must be table or json\n";
    return kExitUsage;
  }
  simulate::TenantModel model;
  Result<std::vector<simulate::TimedSpec>> specs = ParseSpecs(options, &model);
  if (!specs.ok()) {
    std::cerr << "fgpu simulate: " << specs.status().message() << "\n";
    return kExitUsage;
  }
  Result<simulate::Scenario> scenario = simulate::Scenario::Load(options.nodes, options.pods);
  if (!scenario.ok()) {
    std::cerr << "fgpu simulate: " << scenario.status().message() << "\n";
    return kExitUsage;
  }
  if (!scenario->pods.timed) {
    std::cerr << "fgpu simulate: " << options.pods
              << " lacks creation_time and deletion_time on its pods; --time needs them\n";
    return kExitUsage;
  }
  simulate::Progress progress;
  Result<std::vector<simulate::TimedResult>> runs = Status::Internal("not run");
  {
    std::optional<ProgressBar> bar;
    if (!options.no_progress && isatty(STDERR_FILENO) == 1) bar.emplace(progress);
    runs = simulate::RunTimed(*scenario, *specs, options.jobs, progress);
  }
  if (!runs.ok()) {
    std::cerr << "fgpu simulate: " << runs.status().message() << "\n";
    return kExitFailure;
  }
  const std::vector<simulate::TimedSummary> summaries = simulate::SummarizeTimed(*runs);
  Result<std::vector<uint64_t>> seeds = simulate::ParseSeeds(options.seeds);
  const simulate::TimedReportInfo info{.nodes_path = options.nodes,
                                       .pods_path = options.pods,
                                       .nodes = scenario->cluster.node_count(),
                                       .gpus = scenario->cluster.total_gpu_milli() / 1000,
                                       .seeds = seeds.ok() ? *seeds : std::vector<uint64_t>{},
                                       .window = specs->front().window,
                                       .warmup = specs->front().warmup,
                                       .drain = specs->front().drain,
                                       .tenants = model};
  if (options.format == "json") {
    std::cout << simulate::TimedJson(summaries, info).dump(2) << "\n";
  } else {
    std::cout << simulate::RenderTimedTable(summaries, info);
  }
  std::cout << std::flush;
  if (!options.out.empty()) {
    if (Status written = WriteTimedOutputs(options, summaries, info); !written.ok()) {
      std::cerr << "fgpu simulate: " << written.message() << "\n";
      return kExitFailure;
    }
  }
  return kExitOk;
}

}  // namespace fgpu::cli
