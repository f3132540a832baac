// The scheduler's extension points beside the placement policy (policy.h), after the
// Kubernetes scheduler framework: PreFilter (may this request be placed at all — quotas),
// Filter (may it go on this node — resources, a named node, a cordon, a hold), Score (a term
// added to the policy's), Reserve and Unreserve (what a placement takes from, and gives back
// to, a plugin's own books).
//
// Filters are cached with the scores, per (node, request shape), so Filter must be a function
// of the node's spec and state, the request's Shape and the plugin's per-node state — and a
// plugin whose per-node state changes says so with Cluster::Touch (Scheduler::Touch), which
// makes that node be filtered and scored again. PreFilter runs on every decision; it may read
// anything of the request (tier, tenant).
#pragma once

#include <string_view>

#include "core/status.h"
#include "sched/cluster.h"
#include "sched/request.h"

namespace fgpu::sched {

class FilterPlugin {
 public:
  virtual ~FilterPlugin() = default;
  virtual std::string_view name() const = 0;
  virtual bool Filter(const NodeView& node, const Request& request) const = 0;
};

// Adds to the policy's score of a node that passed the filters. Cached like filters: a function
// of the node, the request's Shape (its tier included) and the plugin's per-node state.
class ScorePlugin {
 public:
  virtual ~ScorePlugin() = default;
  virtual std::string_view name() const = 0;
  virtual double Score(const NodeView& node, const Request& request) const = 0;
};

class ReservePlugin {
 public:
  virtual ~ReservePlugin() = default;
  virtual std::string_view name() const = 0;
  // Whether the request may be placed anywhere; a refusal's message says why (it is shown to
  // whoever waits). Called before any node is looked at.
  virtual Status PreFilter(const Request& /*request*/) const { return Status::Ok(); }
  // A placement was reserved for the request / given back (Unreserve or Release).
  virtual void Reserve(const Request& /*request*/, const Placement& /*placement*/) {}
  virtual void Unreserve(const Request& /*request*/, const Placement& /*placement*/) {}
};

// The built-in filters, in the order the scheduler runs them.

// Host CPU and RAM, the GPU model, and gpu_count GPUs each with the share and memory free.
class NodeResourcesFit final : public FilterPlugin {
 public:
  explicit NodeResourcesFit(const Cluster* cluster) : cluster_(cluster) {}
  std::string_view name() const override { return "NodeResourcesFit"; }
  bool Filter(const NodeView& node, const Request& request) const override { return cluster_->Fits(node.id, request); }

 private:
  const Cluster* cluster_;
};

// Request::node, when set: that node only.
class NodeName final : public FilterPlugin {
 public:
  std::string_view name() const override { return "NodeName"; }
  bool Filter(const NodeView& node, const Request& request) const override {
    return request.node == kAnyNode || static_cast<NodeId>(request.node) == node.id;
  }
};

// A cordoned node takes nothing new.
class NodeUnschedulable final : public FilterPlugin {
 public:
  std::string_view name() const override { return "NodeUnschedulable"; }
  bool Filter(const NodeView& node, const Request& /*request*/) const override { return !node.state.cordoned; }
};

}  // namespace fgpu::sched
