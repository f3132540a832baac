// The cluster model: nodes with host CPU and RAM and GPUs of one model each, every GPU with
// a compute capacity (kMilliPerGpu) and memory; what is free on each; and a log of which node
// changed when, so caches above it recompute only what changed.
//
// Contract
// - Cluster::Create validates every node (positive CPU and RAM, 0..kMaxGpusPerNode GPUs, a
//   model on GPU nodes, unique names) and fails with InvalidArgument naming the node.
// - Apply takes a placement's demand only if all of it fits, else changes nothing and
//   returns ResourceExhausted; Remove gives back exactly what Apply took. Neither lets a
//   free quantity go below zero or above capacity.
// - Every successful Apply, Remove, SetCordoned or Touch bumps the node's version and appends
//   the node to the change log.
// - Not thread-safe: one owner (a Scheduler) mutates it; readers synchronise with the owner.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "sched/gpu_set.h"
#include "sched/model_table.h"
#include "sched/request.h"

namespace fgpu::sched {

using NodeId = uint32_t;

struct NodeSpec {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int model = kNoModel;  // ModelTable id; kNoModel for a node without GPUs
  int gpu_count = 0;
  int64_t gpu_memory_bytes = 0;  // per GPU (0: not modelled; only requests for 0 bytes fit)
};

struct NodeState {
  int64_t free_cpu_milli = 0;
  int64_t free_memory_mib = 0;
  std::array<int32_t, kMaxGpusPerNode> free_milli{};
  std::array<int64_t, kMaxGpusPerNode> free_gpu_memory{};
  // Takes no new placements (what it holds stays): Kubernetes' spec.unschedulable. The
  // NodeUnschedulable filter reads it; the owner of the cluster says why.
  bool cordoned = false;
  uint32_t version = 0;  // bumped on every change

  int64_t IdleGpuMilli(int gpu_count) const;
};

// The demand a placement puts on a node: a request's quantities on chosen GPUs.
struct Placement {
  NodeId node = 0;
  GpuSet gpus = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpu_milli = 0;
  int64_t gpu_memory_bytes = 0;
};

Placement MakePlacement(NodeId node, GpuSet gpus, const Request& request);

// Node ids in the order they changed. `base` counts entries dropped from the front, so a
// reader remembers an absolute position and notices when the log moved past it.
struct ChangeLog {
  uint64_t base = 0;
  std::vector<NodeId> nodes;
  uint64_t end() const { return base + nodes.size(); }
};

// A node as policies see it.
struct NodeView {
  NodeId id;
  const NodeSpec& spec;
  const NodeState& state;

  std::span<const int32_t> free_milli() const {
    return {state.free_milli.data(), static_cast<size_t>(spec.gpu_count)};
  }
};

class Cluster {
 public:
  static Result<Cluster> Create(ModelTable models, std::vector<NodeSpec> nodes);

  int node_count() const { return static_cast<int>(specs_.size()); }
  const ModelTable& models() const { return models_; }
  const NodeSpec& spec(NodeId node) const { return specs_[node]; }
  const NodeState& state(NodeId node) const { return states_[node]; }
  NodeView view(NodeId node) const { return {node, specs_[node], states_[node]}; }

  int64_t total_gpu_milli() const { return total_gpu_milli_; }
  int64_t used_gpu_milli() const { return used_gpu_milli_; }

  // Resources only (the NodeResourcesFit filter): the request's host CPU and RAM fit, and (if
  // it wants GPUs) the node's model is accepted and gpu_count of its GPUs each have gpu_milli
  // and gpu_memory_bytes free. Cordons and named nodes are other filters (filter.h).
  bool Fits(NodeId node, const Request& request) const;

  Status Apply(const Placement& placement);
  Status Remove(const Placement& placement);
  Status SetCordoned(NodeId node, bool cordoned);
  // Gives an empty node another name and GPU memory (the agent's MIG instance slots, rebound
  // when a GPU's geometry changes). ResourceExhausted while anything is placed on it.
  Status Reshape(NodeId node, std::string name, int64_t gpu_memory_bytes);
  // Bumps the node's version as if it had changed: a plugin whose per-node state moved (a node
  // held for a reservation) makes cached scores and filters of that node be recomputed.
  Status Touch(NodeId node);

  const ChangeLog& changes() const { return changes_; }

 private:
  Cluster(ModelTable models, std::vector<NodeSpec> nodes);
  Status CheckPlacement(const Placement& placement) const;
  void Changed(NodeId node);

  ModelTable models_;
  std::vector<NodeSpec> specs_;
  std::vector<NodeState> states_;
  ChangeLog changes_;
  int64_t total_gpu_milli_ = 0;
  int64_t used_gpu_milli_ = 0;
};

// GPUs on which one GPU of `request` fits (compute share and memory).
GpuSet FittingGpus(const NodeView& node, const Request& request);

// Cluster::Fits on a node's spec and a state of it that need not be the cluster's (what it
// would be after some placements were given back: preemption and backfill look ahead so).
bool FitsOn(const NodeSpec& spec, const NodeState& state, const Request& request);
// Takes / gives back a placement's demand on such a state; no checks (FitsOn first).
void TakeFrom(NodeState& state, const Placement& placement);
void GiveBack(NodeState& state, const Placement& placement);

}  // namespace fgpu::sched
