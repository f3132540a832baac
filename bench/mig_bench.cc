// MIG planning speed: plans per second for an 8-GPU H100 node from a random current geometry
// (a third of its instances busy) to a random demand mix; the 1-GPU plan is the baseline in the
// same run. Issue 17's bar: >= 1,000 plans/s for the 8-GPU node.
#include <benchmark/benchmark.h>

#include <vector>

#include "sched/mig/planner.h"
#include "sched/rng.h"

namespace {

using fgpu::sched::Rng;
using namespace fgpu::sched::mig;

struct Case {
  std::vector<GpuState> gpus;
  Demand demand;
};

std::vector<Case> MakeCases(int gpu_count) {
  const ModelInfo& h100 = fgpu::mig::InfoOf(fgpu::mig::Model::kH100_80GB);
  const std::vector<Geometry>& all = Catalog::Of(h100).geometries();
  Rng rng(42);
  std::vector<Case> cases(64);
  for (Case& c : cases) {
    c.gpus.resize(static_cast<size_t>(gpu_count));
    for (GpuState& gpu : c.gpus) {
      gpu.model = &h100;
      for (const Placed& placed : all[rng.Uniform(all.size())].instances) gpu.instances.push_back({placed, rng.Uniform(3) == 0});
    }
    for (const Profile& profile : h100.profiles) {
      c.demand.profiles.emplace_back(profile.id, static_cast<int>(rng.Uniform(static_cast<uint64_t>(gpu_count) + 2)));
    }
  }
  return cases;
}

void BM_PlanNode(benchmark::State& state) {
  const std::vector<Case> cases = MakeCases(static_cast<int>(state.range(0)));
  size_t i = 0;
  int64_t steps = 0;
  for (auto _ : state) {
    const Case& c = cases[i++ % cases.size()];
    fgpu::Result<NodePlan> plan = PlanNode(c.gpus, c.demand, PlanOptions{.move_busy = (i % 2) == 0});
    steps += static_cast<int64_t>(plan->steps.size());
    benchmark::DoNotOptimize(plan);
  }
  state.counters["plans/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["steps/plan"] = static_cast<double>(steps) / static_cast<double>(state.iterations());
  state.counters["geometries"] =
      static_cast<double>(Catalog::Of(fgpu::mig::InfoOf(fgpu::mig::Model::kH100_80GB)).geometries().size());
}
BENCHMARK(BM_PlanNode)->Arg(1)->Arg(8);

}  // namespace

BENCHMARK_MAIN();
