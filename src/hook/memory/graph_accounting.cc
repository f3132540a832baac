#include "hook/memory/graph_accounting.h"

#include <algorithm>
#include <new>

#include "hook/interpose/real_driver.h"
#include "hook/memory/device_map.h"
#include "hook/memory/saturating.h"
#include "slice/slice.h"

namespace fgpu::hook {
namespace {

}  // namespace

GraphCalls ResolveGraphCalls() {
  GraphCalls calls;
  calls.get_nodes = reinterpret_cast<decltype(calls.get_nodes)>(RealCudaByName("cuGraphGetNodes"));
  calls.node_get_type = reinterpret_cast<decltype(calls.node_get_type)>(RealCudaByName("cuGraphNodeGetType"));
  calls.mem_alloc_node_get_params = reinterpret_cast<decltype(calls.mem_alloc_node_get_params)>(
      RealCudaByName("cuGraphMemAllocNodeGetParams"));
  calls.mem_free_node_get_params = reinterpret_cast<decltype(calls.mem_free_node_get_params)>(
      RealCudaByName("cuGraphMemFreeNodeGetParams"));
  calls.child_graph_node_get_graph = reinterpret_cast<decltype(calls.child_graph_node_get_graph)>(
      RealCudaByName("cuGraphChildGraphNodeGetGraph"));
  calls.graph_mem_attribute =
      reinterpret_cast<decltype(calls.graph_mem_attribute)>(RealCudaByName("cuDeviceGetGraphMemAttribute"));
  return calls;
}

GraphAccounting::Walk GraphAccounting::Measure(CUgraph graph, ExecEntry* exec) {
  if (calls_->get_nodes == nullptr || calls_->node_get_type == nullptr) return Walk::kFailed;
  std::vector<CUgraph> pending{graph};  // child graphs are walked like the graph itself
  std::vector<CUgraphNode> nodes;
  std::vector<CUdeviceptr> allocated, freed;  // device allocations only: host ones are not charged
  while (!pending.empty()) {
    const CUgraph current = pending.back();
    pending.pop_back();
    size_t count = 0;
    if (calls_->get_nodes(current, nullptr, &count) != CUDA_SUCCESS) return Walk::kFailed;
    nodes.resize(count);
    if (count != 0) {
      size_t filled = count;
      if (calls_->get_nodes(current, nodes.data(), &filled) != CUDA_SUCCESS) return Walk::kFailed;
      nodes.resize(std::min(filled, count));
    }
    for (CUgraphNode node : nodes) {
      CUgraphNodeType type{};
      if (calls_->node_get_type(node, &type) != CUDA_SUCCESS) return Walk::kFailed;
      if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
        CUDA_MEM_ALLOC_NODE_PARAMS params{};
        if (calls_->mem_alloc_node_get_params == nullptr ||
            calls_->mem_alloc_node_get_params(node, &params) != CUDA_SUCCESS) {
          return Walk::kFailed;
        }
        if (params.poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE) continue;  // host: not device memory
        const CUdevice device = params.poolProps.location.id;
        CudaDeviceFacts facts;
        const uint64_t granularity =
            memory_->devices().Cuda(device, &facts) ? facts.granularity : kFallbackGranularity;
        const uint64_t bytes = RoundUpToGranule(params.bytesize, granularity);
        auto portion = std::find_if(exec->portions.begin(), exec->portions.end(),
                                    [&](const Portion& p) { return p.device == device; });
        if (portion == exec->portions.end()) {
          exec->portions.push_back({device, bytes, false, {}});
        } else {
          portion->bytes = SaturatingAdd(portion->bytes, bytes);
        }
        allocated.push_back(params.dptr);
      } else if (type == CU_GRAPH_NODE_TYPE_MEM_FREE) {
        CUdeviceptr dptr = 0;
        if (calls_->mem_free_node_get_params == nullptr ||
            calls_->mem_free_node_get_params(node, &dptr) != CUDA_SUCCESS) {
          return Walk::kFailed;
        }
        freed.push_back(dptr);
      } else if (type == CU_GRAPH_NODE_TYPE_GRAPH) {
        CUgraph child = nullptr;
        if (calls_->child_graph_node_get_graph == nullptr ||
            calls_->child_graph_node_get_graph(node, &child) != CUDA_SUCCESS) {
          return Walk::kFailed;
        }
        pending.push_back(child);
      }
      // Other node types allocate nothing. (Conditional bodies cannot hold memory nodes.)
    }
  }
  if (allocated.empty()) return Walk::kNoAllocations;
  exec->frees_everything = std::all_of(allocated.begin(), allocated.end(), [&](CUdeviceptr dptr) {
    return std::find(freed.begin(), freed.end(), dptr) != freed.end();
  });
  return Walk::kMeasured;
}

CUresult GraphAccounting::RefusedUnknownBytes() {
  memory_->ledger().CountFailClosedRefusal();
  return CUDA_ERROR_OUT_OF_MEMORY;
}

bool GraphAccounting::ReserveMissing(ExecEntry& exec, std::vector<size_t>* reserved) {
  for (size_t i = 0; i < exec.portions.size(); ++i) {
    Portion& portion = exec.portions[i];
    if (portion.resident) continue;
    // Owned by the process: graph memory outlives the context only as long as the exec does.
    if (!memory_->Reserve(Attribution{portion.device, nullptr}, portion.bytes, &portion.reservation)) {
      RollbackPortions(exec, *reserved);
      return false;
    }
    reserved->push_back(i);
  }
  return true;
}

void GraphAccounting::RollbackPortions(ExecEntry& exec, const std::vector<size_t>& reserved) {
  for (size_t i : reserved) {
    memory_->Rollback(exec.portions[i].reservation);
    exec.portions[i].reservation = {};
  }
}

void GraphAccounting::ReleaseResident(Portion& portion) {
  if (!portion.resident) return;
  memory_->Rollback(portion.reservation);
  portion.reservation = {};
  portion.resident = false;
}

CUresult GraphAccounting::Instantiate(CUgraph graph, bool uploads,
                                      FunctionRef<CUresult(CUgraphExec*)> instantiate) {
  // Measured before the driver is called (an upload at instantiation is reserved first), and
  // without the lock: only driver queries. The application does not change a graph while it
  // instantiates it (graphs are not thread-safe objects in the driver either).
  ExecEntry exec;
  Walk walk = Walk::kFailed;
  bool lost = false;
  try {
    walk = Measure(graph, &exec);
  } catch (const std::bad_alloc&) {
    lost = true;
  }
  std::unique_lock lock(mu_);
  if (lost) {
    poisoned_ = true;  // its exec stays unknown: launches of unknown execs are refused now
    if (uploads) return RefusedUnknownBytes();  // the upload would take unknown bytes
  }
  if (lost || walk == Walk::kNoAllocations) {
    lock.unlock();
    CUgraphExec out = nullptr;
    return instantiate(&out);
  }
  if (walk == Walk::kFailed) {
    // Bytes unknown: the exec is remembered so that its launches are refused; an upload at
    // instantiation would let the driver take them now, so it is refused before the call.
    if (uploads) return RefusedUnknownBytes();
    exec = ExecEntry{};
    exec.measured = false;
  }
  // Upload at instantiation: charged like a first upload, and therefore under the lock.
  std::vector<size_t> reserved;
  if (uploads) {
    try {
      reserved.reserve(exec.portions.size());
    } catch (const std::bad_alloc&) {
      poisoned_ = true;
      return RefusedUnknownBytes();
    }
    if (!ReserveMissing(exec, &reserved)) return CUDA_ERROR_OUT_OF_MEMORY;  // counted by Reserve
  }
  CUgraphExec out = nullptr;
  const CUresult rc = instantiate(&out);
  if (rc != CUDA_SUCCESS || out == nullptr) {
    RollbackPortions(exec, reserved);
    return rc;
  }
  for (size_t i : reserved) exec.portions[i].resident = true;
  exec.last_launch = uploads ? ++launches_ : 0;
  try {
    execs_[out] = std::move(exec);
  } catch (const std::bad_alloc&) {
    // Cannot remember it: give back what was reserved and fail every unknown launch from now on.
    RollbackPortions(exec, reserved);
    poisoned_ = true;
  }
  return rc;
}

CUresult GraphAccounting::Launch(CUgraphExec exec_handle, FunctionRef<CUresult()> launch) {
  std::unique_lock lock(mu_);
  auto it = execs_.find(exec_handle);
  if (it == execs_.end()) {
    if (poisoned_) return RefusedUnknownBytes();
    lock.unlock();
    return launch();
  }
  ExecEntry& exec = it->second;
  if (!exec.measured) return RefusedUnknownBytes();
  exec.last_launch = ++launches_;
  const bool resident = std::all_of(exec.portions.begin(), exec.portions.end(),
                                    [](const Portion& p) { return p.resident; });
  if (resident) {
    lock.unlock();
    return launch();
  }
  std::vector<size_t> reserved;
  try {
    reserved.reserve(exec.portions.size());
  } catch (const std::bad_alloc&) {
    poisoned_ = true;
    return RefusedUnknownBytes();
  }
  if (!ReserveMissing(exec, &reserved)) return CUDA_ERROR_OUT_OF_MEMORY;  // counted by Reserve
  const CUresult rc = launch();
  if (rc != CUDA_SUCCESS) {
    RollbackPortions(exec, reserved);
    return rc;
  }
  for (size_t i : reserved) exec.portions[i].resident = true;
  return rc;
}

CUresult GraphAccounting::ExecDestroy(CUgraphExec exec_handle, FunctionRef<CUresult()> destroy) {
  std::unique_lock lock(mu_);
  auto it = execs_.find(exec_handle);
  if (it == execs_.end()) {
    lock.unlock();
    return destroy();
  }
  const CUresult rc = destroy();
  if (rc != CUDA_SUCCESS) return rc;
  for (Portion& portion : it->second.portions) ReleaseResident(portion);
  execs_.erase(it);
  return rc;
}

CUresult GraphAccounting::Trim(CUdevice device, FunctionRef<CUresult()> trim) {
  std::lock_guard lock(mu_);
  const CUresult rc = trim();
  if (rc != CUDA_SUCCESS || calls_->graph_mem_attribute == nullptr) return rc;
  cuuint64_t reported = 0;
  if (calls_->graph_mem_attribute(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reported) != CUDA_SUCCESS) {
    return rc;  // the driver cannot say what it gave back: keep charging (over, never under)
  }
  uint64_t charged = 0;
  std::vector<std::pair<uint64_t, Portion*>> candidates;  // (last launch, portion)
  try {
    for (auto& [handle, exec] : execs_) {
      for (Portion& portion : exec.portions) {
        if (portion.device != device || !portion.resident) continue;
        charged = SaturatingAdd(charged, portion.bytes);
        if (exec.frees_everything) candidates.emplace_back(exec.last_launch, &portion);
      }
    }
  } catch (const std::bad_alloc&) {
    return rc;  // keep charging
  }
  if (charged <= reported) return rc;
  // The driver trims what no launch still needs; the oldest launches are the likeliest done.
  std::sort(candidates.begin(), candidates.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  uint64_t excess = charged - reported;
  for (auto& [launch, portion] : candidates) {
    if (portion->bytes > excess) continue;
    excess -= portion->bytes;
    ReleaseResident(*portion);
  }
  return rc;
}

uint64_t GraphAccounting::ResidentBytes(CUdevice device) {
  std::lock_guard lock(mu_);
  uint64_t total = 0;
  for (const auto& [handle, exec] : execs_) {
    for (const Portion& portion : exec.portions) {
      if (portion.device == device && portion.resident) total = SaturatingAdd(total, portion.bytes);
    }
  }
  return total;
}

}  // namespace fgpu::hook
