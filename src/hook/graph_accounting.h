// GraphAccounting: charges the device memory of CUDA graph allocation nodes to the slice, with
// the lifetime the driver gives it (docs/hook-memory.md "Graph memory").
//
// Contract
// - AddAllocNode / AddFreeNode / GraphDestroyed are told about calls the driver already accepted
//   (forward first): a graph remembers its allocation nodes {node, address, device, bytes
//   rounded up to the device's granularity} and the addresses its free nodes free.
// - Instantiate(graph, uploads, instantiate): after the driver instantiated, the executable
//   graph remembers the graph's bytes per device and whether every allocation is freed inside
//   the graph. A graph the hook knows no allocation of gives an untracked exec (forwarded
//   untouched from then on). With `uploads` (CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) the bytes are
//   reserved before the driver is called, as a first upload's are.
// - Launch(exec, launch) (cuGraphLaunch*, cuGraphUpload*): bytes not resident are reserved before
//   the driver is called (refused: CUDA_ERROR_OUT_OF_MEMORY, the driver is not called, nothing
//   changes), rolled back if the driver fails, resident after it succeeds.
// - ExecDestroy: a successful destroy credits what is resident. Trim: after a successful real
//   trim, credits resident execs on that device that free everything they allocate, oldest
//   launch first, while the charge stays at or above what the driver still reports reserved for
//   graphs there (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT); nothing when the driver cannot say.
// - Driver errors are returned untouched; unknown graphs and execs go to the driver untouched.
// - One std::mutex guards the tables (graph calls are not the allocation hot path). Calls that
//   change what the driver holds for graphs (first launch/upload, exec destroy, trim) keep it
//   across the driver call, so the charge and the driver's number are compared consistently;
//   launches of resident execs take it only to look the exec up.
// - The tables allocate. If an allocation fails the accounting is poisoned: from then on a
//   launch of an exec it does not know is refused with CUDA_ERROR_OUT_OF_MEMORY (fail closed),
//   since it may be one whose bytes were lost.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/abi/cuda_types.h"
#include "hook/accounting.h"
#include "hook/function_ref.h"

namespace fgpu::hook {

// The real cuDeviceGetGraphMemAttribute (null when the driver lacks it).
using GraphMemAttributeFn = CUresult (*)(CUdevice, CUgraphMem_attribute, void*);

class GraphAccounting {
 public:
  GraphAccounting(MemoryAccounting* memory, GraphMemAttributeFn graph_mem_attribute)
      : memory_(memory), graph_mem_attribute_(graph_mem_attribute) {}
  GraphAccounting(const GraphAccounting&) = delete;
  GraphAccounting& operator=(const GraphAccounting&) = delete;

  void AddAllocNode(CUgraph graph, CUgraphNode node, CUdevice device, uint64_t bytes, CUdeviceptr dptr);
  void AddFreeNode(CUgraph graph, CUdeviceptr dptr);
  void GraphDestroyed(CUgraph graph);

  // instantiate(out) is the real call; *out is the new exec when it succeeds.
  CUresult Instantiate(CUgraph graph, bool uploads, FunctionRef<CUresult(CUgraphExec*)> instantiate);
  CUresult Launch(CUgraphExec exec, FunctionRef<CUresult()> launch);
  CUresult ExecDestroy(CUgraphExec exec, FunctionRef<CUresult()> destroy);
  CUresult Trim(CUdevice device, FunctionRef<CUresult()> trim);

  // Tests: bytes charged (resident) for graphs on `device`.
  uint64_t ResidentBytes(CUdevice device);

 private:
  struct AllocNode {
    CUgraphNode node = nullptr;
    CUdeviceptr dptr = 0;
    CUdevice device = 0;
    uint64_t bytes = 0;  // rounded up to the device's granularity
  };
  struct GraphEntry {
    std::vector<AllocNode> allocs;
    std::vector<CUdeviceptr> freed;
  };
  struct Portion {  // an exec's bytes on one device
    CUdevice device = 0;
    uint64_t bytes = 0;
    bool resident = false;
    Reservation reservation;  // valid while resident
  };
  struct ExecEntry {
    std::vector<Portion> portions;
    bool frees_everything = false;
    uint64_t last_launch = 0;  // sequence number of the latest launch or upload
  };

  // Reserves every portion not resident; all or nothing. Caller holds mu_.
  bool ReserveMissing(ExecEntry& exec, std::vector<size_t>* reserved);
  void RollbackPortions(ExecEntry& exec, const std::vector<size_t>& reserved);
  void ReleaseResident(Portion& portion);
  // The exec a graph instantiates into; false if it has no allocations. Caller holds mu_.
  bool ExecOf(CUgraph graph, ExecEntry* exec) const;

  MemoryAccounting* memory_;
  GraphMemAttributeFn graph_mem_attribute_;
  std::mutex mu_;
  std::unordered_map<CUgraph, GraphEntry> graphs_;
  std::unordered_map<CUgraphExec, ExecEntry> execs_;
  uint64_t launches_ = 0;
  bool poisoned_ = false;
};

}  // namespace fgpu::hook
