// One run of the FGD protocol: a policy places a seeded arrival sequence on an initially
// empty cluster, one pod at a time; pods never leave; a pod no node fits is dropped (it still
// counts as arrived). After every pod: allocated GPU and the FGD fragmentation of the cluster
// against the trace's typical workload, binned by arrival (curve.h); and each decision's
// latency (Decide + Reserve, on this thread).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sched/cluster.h"
#include "sched/fragmentation.h"
#include "sched/scheduler.h"
#include "simulate/curve.h"
#include "simulate/trace.h"

namespace fgpu::simulate {

// What every run over one trace shares; read-only while runs use it.
struct Scenario {
  NodeList nodes;
  PodList pods;
  sched::Cluster cluster;          // empty; each run places on its own copy
  sched::TargetWorkload workload;  // FGD's typical pods: the metric, and FGD-style policies

  static Result<Scenario> Load(const std::string& nodes_path, const std::string& pods_path);
};

struct RunResult {
  std::string policy;
  uint64_t seed = 0;
  ArrivalCurve curve;
  int64_t arrivals = 0;
  int64_t placed = 0;
  int64_t failed = 0;
  std::vector<uint32_t> latency_ns;  // one per decision, in arrival order
  double decision_seconds = 0;       // their sum
};

struct RunSpec {
  std::string policy;
  uint64_t seed = 42;
  double inflate = 1.3;
  // kFirstInOrder with a per-seed random node order is what the FGD authors' simulator does.
  sched::TieBreak ties = sched::TieBreak::kFirstInOrder;
};

// `pods_done`, if given, counts processed pods as the run goes (for progress displays).
Result<RunResult> Replay(const Scenario& scenario, const RunSpec& spec,
                         std::atomic<int64_t>* pods_done = nullptr);

// The tie order of one run: nodes sorted by name, shuffled with the seed (the authors prefix
// each node name with a seeded random permutation index and take the smallest name).
std::vector<sched::NodeId> TieOrder(const NodeList& nodes, uint64_t seed);

}  // namespace fgpu::simulate
