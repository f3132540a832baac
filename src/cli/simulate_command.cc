// fgpu simulate: replay a trace through the placement engine under the FGD protocol for each
// policy × seed, and report unallocated GPU, fragmentation and decision speed (table or JSON,
// optionally files and a plot under --out). See docs/placement.md.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/progress_bar.h"
#include "cli/suggest.h"
#include "simulate/simulate.h"

namespace fgpu::cli {

namespace {

Status WriteOutputs(const SimulateOptions& options, const std::vector<simulate::PolicySummary>& summaries,
                    const simulate::ReportInfo& info) {
  const std::filesystem::path dir(options.out);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return Status::Unavailable("cannot create " + dir.string() + ": " + error.message());
  const std::string title = "unallocated GPU vs arrived — " + simulate::TraceName(options.pods) + ", seeds " +
                            simulate::FormatSeeds(info.seeds);
  for (const auto& [name, text] :
       {std::pair<const char*, std::string>{"table.txt", simulate::RenderTable(summaries, info)},
        {"summary.json", simulate::SummaryJson(summaries, info).dump(2) + "\n"},
        {"curves.csv", simulate::RenderCurvesCsv(summaries)},
        {"unallocated.svg", simulate::RenderSvgPlot(summaries, title)}}) {
    Status written = WriteFile(dir / name, text);
    if (!written.ok()) return written;
  }
  std::cerr << "fgpu simulate: wrote table.txt, summary.json, curves.csv and unallocated.svg to "
            << dir.string() << "\n";
  return Status::Ok();
}

struct Loaded {
  simulate::RunPlan plan;
  std::optional<simulate::AuthorsResults> authors;
};

Result<Loaded> ParsePlan(const SimulateOptions& options) {
  Loaded loaded;
  Result<std::vector<std::string>> policies = simulate::ParsePolicies(options.policy);
  if (!policies.ok()) return policies.status();
  Result<std::vector<uint64_t>> seeds = simulate::ParseSeeds(options.seeds);
  if (!seeds.ok()) return seeds.status();
  if (!(options.inflate > 0 && options.inflate <= 10))
    return Status::InvalidArgument("--inflate must be in (0, 10]");
  if (options.format != "table" && options.format != "json") {
    return Status::InvalidArgument("--format must be table or json");
  }
  Result<sched::TieBreak> ties = simulate::ParseTieBreak(options.ties);
  if (!ties.ok()) return ties.status();
  loaded.plan = {std::move(*policies), std::move(*seeds), options.inflate, std::max(options.jobs, 1), *ties};
  if (!options.authors.empty()) {
    Result<simulate::AuthorsResults> authors = simulate::AuthorsResults::Load(options.authors);
    if (!authors.ok()) return authors.status();
    loaded.authors = std::move(*authors);
  }
  return loaded;
}

}  // namespace

CLI::App* AddSimulateFlags(CLI::App& root, SimulateOptions* options) {
  CLI::App* simulate = root.add_subcommand(
      "simulate",
      "Replay a GPU cluster trace through placement policies (the FGD protocol) and compare them");
  simulate->add_option("--nodes", options->nodes, "Node list CSV (sn,cpu_milli,memory_mib,gpu,model)")
      ->required();
  simulate
      ->add_option("--pods", options->pods,
                   "Pod list CSV (name,cpu_milli,memory_mib,num_gpu,gpu_milli[,gpu_spec])")
      ->required();
  simulate->add_option("--policy", options->policy,
                       "Policies, comma-separated, or 'all'; the policies are " + JoinChoices(PlacementPolicyNames()))
      ->capture_default_str();
  simulate->add_option("--seeds", options->seeds, "Seeds: N, N-M, or a comma-separated mix")
      ->capture_default_str();
  simulate
      ->add_option("--inflate", options->inflate, "Top up arrivals to this multiple of cluster GPU capacity")
      ->capture_default_str();
  simulate->add_option("--jobs", options->jobs, "Runs in parallel (one core each)")->capture_default_str();
  simulate->add_option("--out", options->out,
                       "Also write table.txt, summary.json, curves.csv, unallocated.svg here");
  simulate->add_option("--format", options->format, "Standard output: table or json")->capture_default_str();
  simulate->add_option("--authors", options->authors,
                       "The FGD authors' analysis_allo_discrete.csv, to show their numbers beside ours");
  simulate
      ->add_option(
          "--ties", options->ties,
          "Equal best scores: 'first' node of a per-seed random order (the authors' simulator) or 'random'")
      ->capture_default_str();
  simulate->add_flag("--no-progress", options->no_progress, "Never draw the progress bar");
  simulate->add_flag("--time", options->time,
                     "Governance in time: arrivals and departures from the trace's times, the baselines "
                     "fifo, priority, preemption and fgpu compared (docs/governance.md)");
  simulate->add_option("--load", options->loads, "--time: offered load(s) as a multiple of the cluster's GPUs, comma-separated")
      ->capture_default_str();
  simulate->add_option("--baselines", options->baselines, "--time: fifo, priority, preemption, fgpu (comma-separated) or all")
      ->capture_default_str();
  simulate->add_option("--window", options->window_hours, "--time: hours of arrivals")->capture_default_str();
  simulate->add_option("--warmup", options->warmup_hours, "--time: hours the cluster fills, not measured")
      ->capture_default_str();
  simulate->add_option("--drain", options->drain_hours, "--time: hours run after the last arrival")->capture_default_str();
  simulate->add_option("--tenants", options->tenants, "--time: ORGSxTEAMS, the modelled tenants (the trace names none)")
      ->capture_default_str();
  simulate->add_option("--zipf", options->zipf, "--time: skew of the tenants' demand")->capture_default_str();
  simulate->add_option("--borrowing", options->borrowing, "--time: borrowing limit as a multiple of each nominal quota")
      ->capture_default_str();
  simulate->add_flag("--equal-quotas", options->equal_quotas,
                     "--time: equal quotas instead of quotas sized by expected demand");
  simulate->add_flag("--mig", options->mig,
                     "MIG against slices: the arrivals up to 100 % placed as slices, MIG instances and mixed pools "
                     "(docs/mig.md)");
  simulate->add_option("--mig-model", options->mig_model,
                       "--mig: the MIG model every GPU is taken as: A100-40GB, A100-80GB, H100-80GB or H200-141GB")
      ->capture_default_str();
  simulate->add_option("--mig-share", options->mig_share, "--mig: the share of nodes that run MIG in the mixed pools")
      ->capture_default_str();
  return simulate;
}

int RunSimulate(const SimulateOptions& options) {
  if (options.time && options.mig) {
    std::cerr << "fgpu simulate: --time and --mig are separate experiments; give one\n";
    return kExitUsage;
  }
  if (options.time) return RunSimulateInTime(options);
  if (options.mig) return RunSimulateMig(options);
  Result<Loaded> loaded = ParsePlan(options);
  if (!loaded.ok()) {
    std::cerr << "fgpu simulate: " << loaded.status().message() << "\n";
    return kExitUsage;
  }
  Result<simulate::Scenario> scenario = simulate::Scenario::Load(options.nodes, options.pods);
  if (!scenario.ok()) {
    std::cerr << "fgpu simulate: " << scenario.status().message() << "\n";
    return kExitUsage;
  }
  for (const std::string& warning : scenario->pods.warnings)
    std::cerr << "fgpu simulate: warning: " << warning << "\n";
  if (scenario->pods.never_fit > 0) {
    std::cerr << "fgpu simulate: " << scenario->pods.never_fit
              << " pods can never be placed on this cluster; they arrive and fail\n";
  }

  simulate::Progress progress;
  Result<std::vector<simulate::RunResult>> runs = Status::Internal("not run");
  {
    std::optional<ProgressBar> bar;
    if (!options.no_progress && isatty(STDERR_FILENO) == 1) bar.emplace(progress);
    runs = simulate::RunAll(*scenario, loaded->plan, progress);
  }
  if (!runs.ok()) {
    std::cerr << "fgpu simulate: " << runs.status().message() << "\n";
    return kExitFailure;
  }
  const std::vector<simulate::PolicySummary> summaries = simulate::Summarize(*runs, options.inflate);
  simulate::ReportInfo info{.nodes_path = options.nodes,
                            .pods_path = options.pods,
                            .nodes = scenario->cluster.node_count(),
                            .gpus = scenario->cluster.total_gpu_milli() / 1000,
                            .pods = static_cast<int64_t>(scenario->pods.pods.size()),
                            .never_fit = scenario->pods.never_fit,
                            .seeds = loaded->plan.seeds,
                            .inflate = options.inflate,
                            .authors = loaded->authors ? &*loaded->authors : nullptr};
  if (options.format == "json") {
    std::cout << simulate::SummaryJson(summaries, info).dump(2) << "\n";
  } else {
    std::cout << simulate::RenderTable(summaries, info);
  }
  std::cout << std::flush;
  if (!options.out.empty()) {
    Status written = WriteOutputs(options, summaries, info);
    if (!written.ok()) {
      std::cerr << "fgpu simulate: " << written.message() << "\n";
      return kExitFailure;
    }
  }
  return kExitOk;
}

}  // namespace fgpu::cli
