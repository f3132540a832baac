#include "hook/graph_accounting.h"

#include <algorithm>
#include <new>

#include "hook/device_map.h"

namespace fgpu::hook {
namespace {

uint64_t RoundUp(uint64_t bytes, uint64_t granularity) {
  if (granularity <= 1 || bytes % granularity == 0) return bytes;
  const uint64_t pad = granularity - bytes % granularity;
  return bytes > UINT64_MAX - pad ? UINT64_MAX : bytes + pad;  // saturates: the ledger refuses it
}

uint64_t SaturatingAdd(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

}  // namespace

void GraphAccounting::AddAllocNode(CUgraph graph, CUgraphNode node, CUdevice device, uint64_t bytes,
                                   CUdeviceptr dptr) {
  CudaDeviceFacts facts;
  const uint64_t granularity = memory_->devices().Cuda(device, &facts) ? facts.granularity : kFallbackGranularity;
  std::lock_guard lock(mu_);
  try {
    graphs_[graph].allocs.push_back({node, dptr, device, RoundUp(bytes, granularity)});
  } catch (const std::bad_alloc&) {
    poisoned_ = true;
  }
}

void GraphAccounting::AddFreeNode(CUgraph graph, CUdeviceptr dptr) {
  std::lock_guard lock(mu_);
  // A graph without allocation nodes (yet) frees what other graphs or streams allocated: its
  // free nodes matter only for allocations made in the same graph, which are added first.
  auto it = graphs_.find(graph);
  if (it == graphs_.end()) return;
  try {
    it->second.freed.push_back(dptr);
  } catch (const std::bad_alloc&) {
    poisoned_ = true;
  }
}

void GraphAccounting::GraphDestroyed(CUgraph graph) {
  std::lock_guard lock(mu_);
  graphs_.erase(graph);
}

bool GraphAccounting::ExecOf(CUgraph graph, ExecEntry* exec) const {
  auto it = graphs_.find(graph);
  if (it == graphs_.end() || it->second.allocs.empty()) return false;
  const GraphEntry& entry = it->second;
  exec->frees_everything = true;
  for (const AllocNode& alloc : entry.allocs) {
    auto portion = std::find_if(exec->portions.begin(), exec->portions.end(),
                                [&](const Portion& p) { return p.device == alloc.device; });
    if (portion == exec->portions.end()) {
      exec->portions.push_back({alloc.device, alloc.bytes, false, {}});
    } else {
      portion->bytes = SaturatingAdd(portion->bytes, alloc.bytes);
    }
    if (std::find(entry.freed.begin(), entry.freed.end(), alloc.dptr) == entry.freed.end()) {
      exec->frees_everything = false;
    }
  }
  return true;
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
  std::unique_lock lock(mu_);
  ExecEntry exec;
  bool tracked = false;
  try {
    tracked = ExecOf(graph, &exec);
  } catch (const std::bad_alloc&) {
    poisoned_ = true;
  }
  if (!tracked) {
    lock.unlock();
    CUgraphExec out = nullptr;
    return instantiate(&out);
  }
  // Upload at instantiation: charged like a first upload, and therefore under the lock.
  std::vector<size_t> reserved;
  if (uploads) {
    try {
      reserved.reserve(exec.portions.size());
    } catch (const std::bad_alloc&) {
      poisoned_ = true;
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!ReserveMissing(exec, &reserved)) return CUDA_ERROR_OUT_OF_MEMORY;
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
    if (poisoned_) return CUDA_ERROR_OUT_OF_MEMORY;
    lock.unlock();
    return launch();
  }
  ExecEntry& exec = it->second;
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
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (!ReserveMissing(exec, &reserved)) return CUDA_ERROR_OUT_OF_MEMORY;
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
  if (rc != CUDA_SUCCESS || graph_mem_attribute_ == nullptr) return rc;
  cuuint64_t reported = 0;
  if (graph_mem_attribute_(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reported) != CUDA_SUCCESS) {
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
