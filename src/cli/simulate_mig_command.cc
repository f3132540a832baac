// fgpu simulate --mig: what MIG's same-size constraint costs on a trace — the FGD protocol's
// arrivals up to 100 % of the cluster's GPUs, placed as slices, as MIG instances and on mixed
// pools, every GPU taken as one MIG model. docs/mig.md "MIG against slices".
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "simulate/simulate.h"

namespace fgpu::cli {
namespace {

using fgpu::simulate::Pools;

struct Mean {
  double placed = 0, failed = 0, on_mig = 0, unallocated = 0, stranded_compute = 0, stranded_memory = 0,
         stranded_gib = 0;
  double worst_unallocated = 0;
  int runs = 0;
  void Add(const simulate::PoolsResult& r) {
    placed += static_cast<double>(r.placed);
    failed += static_cast<double>(r.failed);
    on_mig += static_cast<double>(r.on_mig);
    unallocated += r.unallocated;
    stranded_compute += r.stranded_compute;
    stranded_memory += r.stranded_memory;
    stranded_gib += r.stranded_memory_gib;
    worst_unallocated = std::max(worst_unallocated, r.unallocated);
    ++runs;
  }
  double Of(double sum) const { return runs > 0 ? sum / runs : 0; }
};

Result<fgpu::mig::Model> ParseModel(const std::string& name) {
  for (const fgpu::mig::ModelInfo& model : fgpu::mig::Models()) {
    if (model.name == name) return model.model;
  }
  return Status::InvalidArgument("--mig-model takes A100-40GB, A100-80GB, H100-80GB or H200-141GB, not '" + name + "'");
}

}  // namespace

int RunSimulateMig(const SimulateOptions& options) {
  Result<fgpu::mig::Model> model = ParseModel(options.mig_model);
  Result<std::vector<uint64_t>> seeds = simulate::ParseSeeds(options.seeds);
  std::string bad;
  if (!model.ok()) bad = model.status().message();
  if (!seeds.ok()) bad = seeds.status().message();
  if (!(options.mig_share >= 0 && options.mig_share <= 1)) bad = "--mig-share must be in [0, 1]";
  if (!(options.inflate > 0 && options.inflate <= 10)) bad = "--inflate must be in (0, 10]";
  if (options.format != "table" && options.format != "json") bad = "--format must be table or json";
  if (!bad.empty()) {
    std::cerr << "fgpu simulate: " << bad << "\n";
    return kExitUsage;
  }
  Result<simulate::Scenario> scenario = simulate::Scenario::Load(options.nodes, options.pods);
  if (!scenario.ok()) {
    std::cerr << "fgpu simulate: " << scenario.status().message() << "\n";
    return kExitUsage;
  }
  std::array<Mean, 3> means;
  for (const Pools pools : {Pools::kSlices, Pools::kMig, Pools::kMixed}) {
    for (const uint64_t seed : *seeds) {
      Result<simulate::PoolsResult> run = simulate::ReplayPools(
          *scenario, {.pools = pools, .seed = seed, .inflate = options.inflate, .model = *model, .mig_fraction = options.mig_share});
      if (!run.ok()) {
        std::cerr << "fgpu simulate: " << run.status().message() << "\n";
        return kExitFailure;
      }
      means[static_cast<size_t>(pools)].Add(*run);
    }
  }
  const fgpu::mig::ModelInfo& info = fgpu::mig::InfoOf(*model);
  if (options.format == "json") {
    nlohmann::json out = {{"trace", simulate::TraceName(options.pods)}, {"model", info.name},
                          {"mig_share", options.mig_share}, {"seeds", simulate::FormatSeeds(*seeds)}};
    for (const Pools pools : {Pools::kSlices, Pools::kMig, Pools::kMixed}) {
      const Mean& m = means[static_cast<size_t>(pools)];
      out["pools"][std::string(simulate::NameOf(pools))] = {
          {"placed", m.Of(m.placed)},           {"failed", m.Of(m.failed)},
          {"on_mig", m.Of(m.on_mig)},           {"unallocated_pct", m.Of(m.unallocated)},
          {"worst_unallocated_pct", m.worst_unallocated}, {"stranded_compute_pct", m.Of(m.stranded_compute)},
          {"stranded_memory_pct", m.Of(m.stranded_memory)}, {"stranded_memory_gib", m.Of(m.stranded_gib)}};
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::printf("fgpu simulate --mig: %s on %zu nodes (%lld GPUs, each taken as a %s), seeds %s, at arrived 100 %%\n",
              simulate::TraceName(options.pods).c_str(), static_cast<size_t>(scenario->cluster.node_count()),
              static_cast<long long>(scenario->cluster.total_gpu_milli() / 1000), std::string(info.name).c_str(),
              simulate::FormatSeeds(*seeds).c_str());
  std::printf("%-7s %8s %7s %7s %12s %12s %17s %17s %14s\n", "pools", "placed", "failed", "on MIG", "unalloc %",
              "worst %", "stranded SM %", "stranded mem %", "stranded GiB");
  for (const Pools pools : {Pools::kSlices, Pools::kMig, Pools::kMixed}) {
    const Mean& m = means[static_cast<size_t>(pools)];
    std::printf("%-7s %8.0f %7.0f %7.0f %12.2f %12.2f %17.2f %17.2f %14.0f\n", std::string(simulate::NameOf(pools)).c_str(),
                m.Of(m.placed), m.Of(m.failed), m.Of(m.on_mig), m.Of(m.unallocated), m.worst_unallocated,
                m.Of(m.stranded_compute), m.Of(m.stranded_memory), m.Of(m.stranded_gib));
  }
  std::printf("mixed: %.0f %% of the nodes run MIG; a pod whose profile wastes at most 1/8 of a GPU goes there first\n",
              100 * options.mig_share);
  return kExitOk;
}

}  // namespace fgpu::cli
