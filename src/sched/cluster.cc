#include "sched/cluster.h"

#include <unordered_set>
#include <utility>

namespace fgpu::sched {

namespace {

// The change log is trimmed past this many entries; readers further behind rebuild fully.
constexpr size_t kChangeLogLimit = 1 << 16;

Status ValidateNode(const NodeSpec& node, const ModelTable& models) {
  const std::string where = "node '" + node.name + "': ";
  if (node.name.empty()) return Status::InvalidArgument("a node has no name");
  if (node.cpu_milli <= 0) return Status::InvalidArgument(where + "cpu_milli must be positive");
  if (node.memory_mib <= 0) return Status::InvalidArgument(where + "memory_mib must be positive");
  if (node.gpu_memory_bytes < 0) return Status::InvalidArgument(where + "gpu_memory_bytes is negative");
  if (node.gpu_count < 0 || node.gpu_count > kMaxGpusPerNode) {
    return Status::InvalidArgument(where + "gpu count " + std::to_string(node.gpu_count) + " is outside 0.." +
                                   std::to_string(kMaxGpusPerNode));
  }
  if (node.gpu_count > 0 && (node.model < 0 || node.model >= models.size())) {
    return Status::InvalidArgument(where + "has GPUs but no known GPU model");
  }
  if (node.gpu_count == 0 && node.model != kNoModel) {
    return Status::InvalidArgument(where + "has a GPU model but no GPUs");
  }
  return Status::Ok();
}

}  // namespace

int64_t NodeState::IdleGpuMilli(int gpu_count) const {
  int64_t idle = 0;
  for (int gpu = 0; gpu < gpu_count; ++gpu) idle += free_milli[static_cast<size_t>(gpu)];
  return idle;
}

Placement MakePlacement(NodeId node, GpuSet gpus, const Request& request) {
  return {.node = node,
          .gpus = gpus,
          .cpu_milli = request.cpu_milli,
          .memory_mib = request.memory_mib,
          .gpu_milli = request.gpu_milli,
          .gpu_memory_bytes = request.gpu_memory_bytes};
}

Result<Cluster> Cluster::Create(ModelTable models, std::vector<NodeSpec> nodes) {
  std::unordered_set<std::string> names;
  for (const NodeSpec& node : nodes) {
    Status valid = ValidateNode(node, models);
    if (!valid.ok()) return valid;
    if (!names.insert(node.name).second) {
      return Status::InvalidArgument("node '" + node.name + "' is listed twice");
    }
  }
  return Cluster(std::move(models), std::move(nodes));
}

Cluster::Cluster(ModelTable models, std::vector<NodeSpec> nodes)
    : models_(std::move(models)), specs_(std::move(nodes)), states_(specs_.size()) {
  for (size_t index = 0; index < specs_.size(); ++index) {
    const NodeSpec& spec = specs_[index];
    NodeState& state = states_[index];
    state.free_cpu_milli = spec.cpu_milli;
    state.free_memory_mib = spec.memory_mib;
    for (int gpu = 0; gpu < spec.gpu_count; ++gpu) {
      state.free_milli[static_cast<size_t>(gpu)] = kMilliPerGpu;
      state.free_gpu_memory[static_cast<size_t>(gpu)] = spec.gpu_memory_bytes;
    }
    total_gpu_milli_ += int64_t{spec.gpu_count} * kMilliPerGpu;
  }
}

GpuSet FittingGpus(const NodeView& node, const Request& request) {
  GpuSet fitting = 0;
  for (int gpu = 0; gpu < node.spec.gpu_count; ++gpu) {
    const auto index = static_cast<size_t>(gpu);
    if (node.state.free_milli[index] >= request.gpu_milli &&
        node.state.free_gpu_memory[index] >= request.gpu_memory_bytes) {
      fitting |= GpuBit(gpu);
    }
  }
  return fitting;
}

bool FitsOn(const NodeSpec& spec, const NodeState& state, const Request& request) {
  if (state.free_cpu_milli < request.cpu_milli || state.free_memory_mib < request.memory_mib) return false;
  if (request.gpu_count == 0) return true;
  if (!Accepts(request.models, spec.model)) return false;
  int fitting = 0;
  for (int gpu = 0; gpu < spec.gpu_count; ++gpu) {
    const auto index = static_cast<size_t>(gpu);
    if (state.free_milli[index] >= request.gpu_milli && state.free_gpu_memory[index] >= request.gpu_memory_bytes) {
      if (++fitting == request.gpu_count) return true;
    }
  }
  return false;
}

void TakeFrom(NodeState& state, const Placement& placement) {
  state.free_cpu_milli -= placement.cpu_milli;
  state.free_memory_mib -= placement.memory_mib;
  for (int gpu = 0; gpu < kMaxGpusPerNode; ++gpu) {
    if (!Contains(placement.gpus, gpu)) continue;
    state.free_milli[static_cast<size_t>(gpu)] -= placement.gpu_milli;
    state.free_gpu_memory[static_cast<size_t>(gpu)] -= placement.gpu_memory_bytes;
  }
}

void GiveBack(NodeState& state, const Placement& placement) {
  state.free_cpu_milli += placement.cpu_milli;
  state.free_memory_mib += placement.memory_mib;
  for (int gpu = 0; gpu < kMaxGpusPerNode; ++gpu) {
    if (!Contains(placement.gpus, gpu)) continue;
    state.free_milli[static_cast<size_t>(gpu)] += placement.gpu_milli;
    state.free_gpu_memory[static_cast<size_t>(gpu)] += placement.gpu_memory_bytes;
  }
}

bool Cluster::Fits(NodeId node, const Request& request) const { return FitsOn(specs_[node], states_[node], request); }

Status Cluster::CheckPlacement(const Placement& placement) const {
  if (placement.node >= specs_.size()) {
    return Status::InvalidArgument("placement on node " + std::to_string(placement.node) + " of " +
                                   std::to_string(specs_.size()));
  }
  const NodeSpec& spec = specs_[placement.node];
  if (spec.gpu_count < kMaxGpusPerNode && (placement.gpus >> spec.gpu_count) != 0) {
    return Status::InvalidArgument("placement names a GPU that node '" + spec.name + "' does not have");
  }
  if (placement.cpu_milli < 0 || placement.memory_mib < 0 || placement.gpu_milli < 0 ||
      placement.gpu_memory_bytes < 0) {
    return Status::InvalidArgument("placement with a negative quantity");
  }
  return Status::Ok();
}

Status Cluster::Apply(const Placement& placement) {
  Status valid = CheckPlacement(placement);
  if (!valid.ok()) return valid;
  NodeState& state = states_[placement.node];
  bool fits = state.free_cpu_milli >= placement.cpu_milli && state.free_memory_mib >= placement.memory_mib;
  for (int gpu = 0; fits && gpu < kMaxGpusPerNode; ++gpu) {
    if (!Contains(placement.gpus, gpu)) continue;
    const auto index = static_cast<size_t>(gpu);
    fits = state.free_milli[index] >= placement.gpu_milli &&
           state.free_gpu_memory[index] >= placement.gpu_memory_bytes;
  }
  if (!fits)
    return Status::ResourceExhausted("placement does not fit on node '" + specs_[placement.node].name + "'");
  TakeFrom(state, placement);
  used_gpu_milli_ += int64_t{Count(placement.gpus)} * placement.gpu_milli;
  Changed(placement.node);
  return Status::Ok();
}

Status Cluster::Remove(const Placement& placement) {
  Status valid = CheckPlacement(placement);
  if (!valid.ok()) return valid;
  const NodeSpec& spec = specs_[placement.node];
  NodeState& state = states_[placement.node];
  bool within = state.free_cpu_milli + placement.cpu_milli <= spec.cpu_milli &&
                state.free_memory_mib + placement.memory_mib <= spec.memory_mib;
  for (int gpu = 0; within && gpu < kMaxGpusPerNode; ++gpu) {
    if (!Contains(placement.gpus, gpu)) continue;
    const auto index = static_cast<size_t>(gpu);
    within = state.free_milli[index] + placement.gpu_milli <= kMilliPerGpu &&
             state.free_gpu_memory[index] + placement.gpu_memory_bytes <= spec.gpu_memory_bytes;
  }
  if (!within) {
    return Status::InvalidArgument("removing more than node '" + spec.name + "' has in use");
  }
  GiveBack(state, placement);
  used_gpu_milli_ -= int64_t{Count(placement.gpus)} * placement.gpu_milli;
  Changed(placement.node);
  return Status::Ok();
}

Status Cluster::SetCordoned(NodeId node, bool cordoned) {
  if (node >= specs_.size()) return Status::InvalidArgument("no node " + std::to_string(node));
  if (states_[node].cordoned == cordoned) return Status::Ok();
  states_[node].cordoned = cordoned;
  Changed(node);
  return Status::Ok();
}

Status Cluster::Reshape(NodeId node, std::string name, int64_t gpu_memory_bytes) {
  if (node >= specs_.size()) return Status::InvalidArgument("no node " + std::to_string(node));
  if (gpu_memory_bytes < 0) return Status::InvalidArgument("negative GPU memory");
  NodeSpec& spec = specs_[node];
  NodeState& state = states_[node];
  for (int gpu = 0; gpu < spec.gpu_count; ++gpu) {
    const auto index = static_cast<size_t>(gpu);
    if (state.free_milli[index] != kMilliPerGpu || state.free_gpu_memory[index] != spec.gpu_memory_bytes) {
      return Status::ResourceExhausted("node '" + spec.name + "' holds placements");
    }
  }
  spec.name = std::move(name);
  spec.gpu_memory_bytes = gpu_memory_bytes;
  for (int gpu = 0; gpu < spec.gpu_count; ++gpu) state.free_gpu_memory[static_cast<size_t>(gpu)] = gpu_memory_bytes;
  Changed(node);
  return Status::Ok();
}

Status Cluster::Touch(NodeId node) {
  if (node >= specs_.size()) return Status::InvalidArgument("no node " + std::to_string(node));
  Changed(node);
  return Status::Ok();
}

void Cluster::Changed(NodeId node) {
  ++states_[node].version;
  if (changes_.nodes.size() >= kChangeLogLimit) {
    changes_.base += changes_.nodes.size();
    changes_.nodes.clear();
  }
  changes_.nodes.push_back(node);
}

}  // namespace fgpu::sched
