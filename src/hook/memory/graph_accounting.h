// GraphAccounting: charges the device memory of CUDA graph allocation nodes to the slice, with
// the lifetime the driver gives it (docs/hook-memory.md "Graph memory").
//
// Contract
// - Instantiate(graph, uploads, instantiate): BEFORE the driver instantiates, the graph is
//   measured through the real driver (GraphCalls: cuGraphGetNodes, cuGraphNodeGetType,
//   cuGraphMemAllocNodeGetParams, cuGraphMemFreeNodeGetParams, and cuGraphChildGraphNodeGetGraph
//   into every child graph): its device allocation nodes' bytes per device, each rounded up to
//   the device's granularity, and whether every allocation is freed inside the graph. However
//   the nodes were made (cuGraphAddMemAllocNode, cuGraphAddNode[_v2], stream capture of
//   cuMemAllocAsync*, moved child graphs), the graph the driver instantiates is what is
//   measured. A graph without device allocation nodes gives an untracked exec (forwarded
//   untouched from then on). With `uploads` (CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) the bytes are
//   reserved before the driver is called, as a first upload's are. A graph the driver cannot
//   walk (a query fails) but does instantiate gives an exec whose launches are refused
//   (CUDA_ERROR_OUT_OF_MEMORY): its bytes are unknown (fail closed); with `uploads` such an
//   instantiation is refused before the driver is called.
// - Launch(exec, launch) (cuGraphLaunch*, cuGraphUpload*): bytes not resident are reserved before
//   the driver is called (refused: CUDA_ERROR_OUT_OF_MEMORY, the driver is not called, nothing
//   changes), rolled back if the driver fails, resident after it succeeds.
// - ExecDestroy: a successful destroy credits what is resident. Trim: after a successful real
//   trim, credits resident execs on that device that free everything they allocate, oldest
//   launch first, while the charge stays at or above what the driver still reports reserved for
//   graphs there (CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT); nothing when the driver cannot say.
// - Driver errors are returned untouched; unknown execs go to the driver untouched.
// - One std::mutex guards the exec table (graph calls are not the allocation hot path). The
//   walk runs before it is taken (driver queries only). Calls that change what the driver holds
//   for graphs (first launch/upload, exec destroy, trim) keep it across the driver call, so the
//   charge and the driver's number are compared consistently; launches of resident execs take
//   it only to look the exec up.
// - The table and the walk allocate. If an allocation fails the accounting is poisoned: from
//   then on a launch of an exec it does not know is refused with CUDA_ERROR_OUT_OF_MEMORY (fail
//   closed), since it may be one whose bytes were lost.
// - Counters: a refusal for the cap is counted in the ledger's oom_refusals (by
//   MemoryAccounting::Reserve), one for unknown bytes (the cases above marked fail closed, and a
//   failed allocation of the hook's own bookkeeping) in fail_closed_refusals; once per refused call.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/abi/cuda_types.h"
#include "hook/interpose/function_ref.h"
#include "hook/memory/accounting.h"

namespace fgpu::hook {

// The real driver functions GraphAccounting calls itself (never our wrappers); null where the
// driver lacks one. Tests fake them.
struct GraphCalls {
  CUresult (*get_nodes)(CUgraph, CUgraphNode*, size_t*) = nullptr;
  CUresult (*node_get_type)(CUgraphNode, CUgraphNodeType*) = nullptr;
  CUresult (*mem_alloc_node_get_params)(CUgraphNode, CUDA_MEM_ALLOC_NODE_PARAMS*) = nullptr;
  CUresult (*mem_free_node_get_params)(CUgraphNode, CUdeviceptr*) = nullptr;
  CUresult (*child_graph_node_get_graph)(CUgraphNode, CUgraph*) = nullptr;
  CUresult (*graph_mem_attribute)(CUdevice, CUgraphMem_attribute, void*) = nullptr;
};

// From the hook's real-symbol resolution. Call after HookState().
GraphCalls ResolveGraphCalls();

class GraphAccounting {
 public:
  GraphAccounting(MemoryAccounting* memory, const GraphCalls* calls) : memory_(memory), calls_(calls) {}
  GraphAccounting(const GraphAccounting&) = delete;
  GraphAccounting& operator=(const GraphAccounting&) = delete;

  // instantiate(out) is the real call; *out is the new exec when it succeeds.
  CUresult Instantiate(CUgraph graph, bool uploads, FunctionRef<CUresult(CUgraphExec*)> instantiate);
  CUresult Launch(CUgraphExec exec, FunctionRef<CUresult()> launch);
  CUresult ExecDestroy(CUgraphExec exec, FunctionRef<CUresult()> destroy);
  CUresult Trim(CUdevice device, FunctionRef<CUresult()> trim);

  // Tests: bytes charged (resident) for graphs on `device`.
  uint64_t ResidentBytes(CUdevice device);

 private:
  struct Portion {  // an exec's bytes on one device
    CUdevice device = 0;
    uint64_t bytes = 0;
    bool resident = false;
    Reservation reservation;  // valid while resident
  };
  struct ExecEntry {
    std::vector<Portion> portions;
    bool frees_everything = false;
    bool measured = true;      // false: the walk failed; launches are refused
    uint64_t last_launch = 0;  // sequence number of the latest launch or upload
  };
  enum class Walk { kNoAllocations, kMeasured, kFailed };

  // Measures `graph` and its child graphs through the driver into `exec`. May throw bad_alloc.
  Walk Measure(CUgraph graph, ExecEntry* exec);
  // Reserves every portion not resident; all or nothing. Caller holds mu_.
  bool ReserveMissing(ExecEntry& exec, std::vector<size_t>* reserved);
  void RollbackPortions(ExecEntry& exec, const std::vector<size_t>& reserved);
  // Counts a fail-closed refusal; returns CUDA_ERROR_OUT_OF_MEMORY.
  CUresult RefusedUnknownBytes();
  void ReleaseResident(Portion& portion);

  MemoryAccounting* memory_;
  const GraphCalls* calls_;
  std::mutex mu_;
  std::unordered_map<CUgraphExec, ExecEntry> execs_;
  uint64_t launches_ = 0;
  bool poisoned_ = false;
};

}  // namespace fgpu::hook
