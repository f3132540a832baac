// Placement speed on the 1,213-node Alibaba cluster: each iteration replays the `default` trace
// (10.8k decisions, FGD protocol, seed 42) with one policy on this thread and reports
// decisions/s and p50/p99 decision latency (Decide + Reserve). BestFit, the cheapest scoring
// policy, is the baseline in the same run.
//   build/release/bin/fgpu_sched_bench [--benchmark_filter=FGD]
// The trace is read from $FGPU_TRACE_DIR (default: ../shared/data/alibaba-gpu-v2023 beside
// the source tree).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "simulate/replay.h"

namespace {

std::string TraceDir() {
  const char* dir = std::getenv("FGPU_TRACE_DIR");
  return dir != nullptr && *dir != '\0' ? dir : FGPU_DEFAULT_TRACE_DIR;
}

const fgpu::Result<fgpu::simulate::Scenario>& DefaultTrace() {
  static const auto* scenario = new fgpu::Result<fgpu::simulate::Scenario>(fgpu::simulate::Scenario::Load(
      TraceDir() + "/openb_node_list_gpu_node.csv", TraceDir() + "/openb_pod_list_default.csv"));
  return *scenario;
}

double Percentile(std::vector<uint32_t> values, double fraction) {
  const auto rank = static_cast<size_t>(fraction * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(rank), values.end());
  return values[rank] / 1000.0;
}

void BM_Replay(benchmark::State& state, const char* policy) {
  const auto& scenario = DefaultTrace();
  if (!scenario.ok()) {
    state.SkipWithError(
        ("cannot load the trace (set FGPU_TRACE_DIR): " + scenario.status().message()).c_str());
    return;
  }
  std::vector<uint32_t> latencies;
  double seconds = 0;
  for (auto _ : state) {
    fgpu::Result<fgpu::simulate::RunResult> run = fgpu::simulate::Replay(*scenario, {policy, 42, 1.3});
    if (!run.ok()) {
      state.SkipWithError(run.status().message().c_str());
      return;
    }
    latencies.insert(latencies.end(), run->latency_ns.begin(), run->latency_ns.end());
    seconds += run->decision_seconds;
  }
  state.counters["decisions/s"] = static_cast<double>(latencies.size()) / seconds;
  state.counters["p50_us"] = Percentile(latencies, 0.50);
  state.counters["p99_us"] = Percentile(latencies, 0.99);
}

}  // namespace

BENCHMARK_CAPTURE(BM_Replay, BestFit_baseline, "BestFit")->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_Replay, FGD, "FGD")->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_Replay, FGD_exact, "FGD-exact")->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(BM_Replay, FGD_plus, "FGD+")->Unit(benchmark::kMillisecond)->Iterations(3);

BENCHMARK_MAIN();
