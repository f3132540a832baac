// The Governor's speed on the 1,213-node Alibaba cluster with 10,000 requests waiting
// (issue 16: ≥ 5,000 decisions/s, p99 < 5 ms). The cluster is filled with the `default` trace's
// pods (tiers from qos, the seeded tenant model's quotas, FGD+ placement) until 10,000 wait;
// then each step is one event as a live cluster sees them — a running workload ends, a new
// request arrives — and the pass over the queue that follows (Finish + Submit + Schedule). It
// reports events/s, the p50/p99 of one event, and the placement decisions (Decide + Reserve
// attempts) per second of Governor time. The baseline in the same run is the same steps with an
// empty queue (`BM_Events/0`): what an event costs when nobody waits.
//   build/release/bin/fgpu_governor_bench
// The trace is read from $FGPU_TRACE_DIR (default: ../shared/data/alibaba-gpu-v2023 beside the
// source tree).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

#include "sched/governance/governor.h"
#include "sched/policies/registry.h"
#include "simulate/replay.h"
#include "simulate/tenants.h"
#include "simulate/timeline.h"

namespace {

using namespace fgpu;

std::string TraceDir() {
  const char* dir = std::getenv("FGPU_TRACE_DIR");
  return dir != nullptr && *dir != '\0' ? dir : FGPU_DEFAULT_TRACE_DIR;
}

const Result<simulate::Scenario>& DefaultTrace() {
  static const auto* scenario = new Result<simulate::Scenario>(simulate::Scenario::Load(
      TraceDir() + "/openb_node_list_gpu_node.csv", TraceDir() + "/openb_pod_list_default.csv"));
  return *scenario;
}

double Percentile(std::vector<double> values, double fraction) {
  if (values.empty()) return 0;
  const auto rank = static_cast<size_t>(fraction * static_cast<double>(values.size() - 1));
  std::nth_element(values.begin(), values.begin() + static_cast<ptrdiff_t>(rank), values.end());
  return values[rank];
}

void BM_Events(benchmark::State& state) {
  const auto& scenario = DefaultTrace();
  if (!scenario.ok()) {
    state.SkipWithError(("cannot load the trace (set FGPU_TRACE_DIR): " + scenario.status().message()).c_str());
    return;
  }
  const size_t queued_target = static_cast<size_t>(state.range(0));
  const simulate::TenantModel model;
  Result<sched::QuotaTree> quotas = simulate::ModelQuotas(model, scenario->cluster.total_gpu_milli());
  Result<std::unique_ptr<sched::Policy>> policy = sched::MakePolicy("FGD+", {scenario->workload});
  sched::Scheduler scheduler(scenario->cluster, std::move(*policy),
                             {.seed = 42, .ties = sched::TieBreak::kFirstInOrder,
                              .node_order = simulate::TieOrder(scenario->nodes, 42)});
  sched::Governor governor(&scheduler, std::move(*quotas), sched::GovernorOptions{});
  const std::vector<std::string> tenants = simulate::TenantNames(model);
  const std::vector<int> tenant_of = simulate::AssignTenants(1'000'000, model, 42);
  size_t next_pod = 0;
  double now = 0;
  const auto submit = [&] {
    const simulate::Pod& pod = scenario->pods.pods[next_pod % scenario->pods.pods.size()];
    sched::WorkloadSpec spec;
    spec.request = pod.request;
    spec.request.tier = simulate::TierOfQos(pod.qos);
    spec.request.tenant = tenants[static_cast<size_t>(tenant_of[next_pod % tenant_of.size()])];
    if (pod.request.gpu_count > 1) {
      spec.members = pod.request.gpu_count;
      spec.request.gpu_count = 1;
      spec.request.cpu_milli /= spec.members;
      spec.request.memory_mib /= spec.members;
    }
    spec.duration = 600;
    ++next_pod;
    (void)governor.Submit(spec, now);
  };
  // Fill the cluster, then the queue.
  for (int round = 0; round < 400 && governor.queued() < queued_target + 1; ++round) {
    for (int i = 0; i < 250; ++i) submit();
    now += 1;
    (void)governor.Schedule(now);
  }
  std::vector<double> latencies;
  uint64_t decisions = 0;
  double seconds = 0;
  uint64_t victim = 0;
  for (auto _ : state) {
    now += 0.05;
    const auto start = std::chrono::steady_clock::now();
    const uint64_t before = governor.counters().decisions;
    // One running workload ends (a pseudo-random one), one request arrives, one pass.
    const auto& workloads = governor.workloads();
    victim = victim * 6364136223846793005ULL + 1442695040888963407ULL;
    const uint64_t newest = workloads.empty() ? 1 : workloads.rbegin()->first;
    auto it = workloads.lower_bound(1 + (victim >> 33) % newest);
    while (it != workloads.end() && it->second.state != sched::WorkloadState::kRunning) ++it;
    if (it == workloads.end()) it = workloads.begin();
    while (it != workloads.end() && it->second.state != sched::WorkloadState::kRunning) ++it;
    if (it != workloads.end()) (void)governor.Finish(it->first, now);
    if (queued_target > 0) {
      submit();
    } else {
      while (governor.queued() > 0) (void)governor.Cancel(governor.QueueOrder().front(), now);
    }
    for (const sched::Action& action : governor.Schedule(now)) {
      if (action.kind == sched::Action::Kind::kPreempt) (void)governor.Cancel(action.workload, now);
    }
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    latencies.push_back(took);
    seconds += took;
    decisions += governor.counters().decisions - before;
  }
  state.counters["queued"] = static_cast<double>(governor.queued());
  state.counters["running"] = static_cast<double>(governor.running());
  state.counters["events/s"] = static_cast<double>(latencies.size()) / seconds;
  state.counters["decisions/s"] = static_cast<double>(decisions) / seconds;
  state.counters["p50_us"] = Percentile(latencies, 0.50) * 1e6;
  state.counters["p99_us"] = Percentile(latencies, 0.99) * 1e6;
}

BENCHMARK(BM_Events)->Arg(0)->Arg(10'000)->Iterations(3000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
