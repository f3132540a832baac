// The placement-policy plugin: how good a node is for a request, and which of its GPUs to use.
//
// The scheduler filters (Cluster::Fits), then asks the policy to score each node that fits,
// then reserves the best. It caches scores per (node, request shape) and rescores a node only
// when that node changed, so a policy's Score must be a function of:
//   - the node's spec and state (NodeView),
//   - the request's Shape (tier and tenant are not part of it),
//   - the policy's own per-node state, changed only in OnPlaced/OnRemoved for that node,
//   - global state that changes only when Observe returns true (which drops every cached score).
// A policy that cannot promise this returns false from cacheable(): then every node is
// rescored on every decision. What does depend on cluster-wide state that moves with every
// decision goes in ModelBias: a term per GPU model, added to the cached scores of that
// model's nodes at each decision (it costs one call per model, not one per node).
//
// Scores are compared exactly, higher is better; SchedulerOptions::ties says how equal best
// scores are decided.
#pragma once

#include <string_view>

#include "sched/cluster.h"
#include "sched/gpu_set.h"
#include "sched/request.h"
#include "sched/rng.h"

namespace fgpu::sched {

struct NodeScore {
  double score = 0;
  GpuSet gpus = 0;  // the GPUs the request would take on this node
};

class Policy {
 public:
  virtual ~Policy() = default;

  virtual std::string_view name() const = 0;

  // Called once, when the scheduler takes the policy, with the cluster it will place on.
  virtual void OnAttach(const Cluster& /*cluster*/) {}

  // Called once per decision before any scoring. Returning true says the policy's global
  // state changed (a learned workload moved): every cached score is dropped.
  virtual bool Observe(const Request& /*request*/) { return false; }

  // Scores a node on which the request fits.
  virtual NodeScore Score(const NodeView& node, const Request& request) = 0;

  // Added to the score of every node of `model` (kNoModel: nodes without GPUs) for this
  // decision. Only called when has_model_bias().
  virtual double ModelBias(int /*model*/, const Request& /*request*/) { return 0; }
  virtual bool has_model_bias() const { return false; }

  // The GPUs to take on the chosen node. Default: the ones its score named.
  virtual GpuSet ChooseGpus(const NodeView& /*node*/, const Request& /*request*/, const NodeScore& scored,
                            Rng& /*rng*/) {
    return scored.gpus;
  }

  // After a placement was applied to / removed from a node (the node's version has moved).
  virtual void OnPlaced(const NodeView& /*node*/, const Placement& /*placement*/) {}
  virtual void OnRemoved(const NodeView& /*node*/, const Placement& /*placement*/) {}

  virtual bool cacheable() const { return true; }

  // Whether ties must be broken at random whatever SchedulerOptions::ties says (a policy whose
  // scores are all equal on purpose, like Random).
  virtual bool random_ties() const { return false; }
};

}  // namespace fgpu::sched
