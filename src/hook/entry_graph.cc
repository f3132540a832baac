// Exported wrappers: graph memory (allocation/free nodes, instantiation, launch/upload, exec
// destroy, trim). Every wrapper forwards first where it only learns something (node creation,
// instantiation, graph destroy) and reserves before the driver where the driver would take
// memory (first launch/upload); GraphAccounting holds the rules (docs/hook-memory.md
// "Graph memory").
#include <new>

#include "hook/exports.h"
#include "hook/graph_accounting.h"
#include "hook/memory_hook.h"

namespace {

using fgpu::hook::EnforcingMemoryHook;
using fgpu::hook::GraphAccounting;
using fgpu::hook::GraphMemAttributeFn;
using fgpu::hook::MemoryHook;
using fgpu::hook::MissingRealCuda;

// The process's graph accounting, or null when the hook does not enforce. Built once, never
// destroyed (wrappers may run during exit), like the MemoryHook it charges through.
GraphAccounting* EnforcingGraphs() {
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr) return nullptr;
  alignas(GraphAccounting) static unsigned char storage[sizeof(GraphAccounting)];
  static auto* const graphs = new (storage) GraphAccounting(
      &hook->accounting(),
      reinterpret_cast<GraphMemAttributeFn>(fgpu::hook::RealCudaByName("cuDeviceGetGraphMemAttribute")));
  return graphs;
}

// The four instantiation entry points: real call first; the exec inherits the graph's bytes.
template <typename Instantiate>
CUresult Instantiated(CUgraphExec* exec, CUgraph graph, bool uploads, Instantiate&& instantiate) {
  GraphAccounting* graphs = exec != nullptr ? EnforcingGraphs() : nullptr;
  if (graphs == nullptr) return instantiate();
  return graphs->Instantiate(graph, uploads, [&](CUgraphExec* out) {
    const CUresult rc = instantiate();
    if (rc == CUDA_SUCCESS) *out = *exec;
    return rc;
  });
}

template <typename Launch>
CUresult Launched(CUgraphExec exec, Launch&& launch) {
  GraphAccounting* graphs = EnforcingGraphs();
  if (graphs == nullptr) return launch();
  return graphs->Launch(exec, launch);
}

bool UploadsAtInstantiation(const CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return params != nullptr && (params->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) != 0;
}

}  // namespace

extern "C" {

CUresult cuGraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
  const auto real = FGPU_REAL_CUDA(cuGraphAddMemAllocNode);
  if (real == nullptr) return MissingRealCuda();
  const CUresult rc = real(phGraphNode, hGraph, dependencies, numDependencies, nodeParams);
  if (rc != CUDA_SUCCESS || nodeParams->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE) return rc;
  if (GraphAccounting* graphs = EnforcingGraphs(); graphs != nullptr) {
    graphs->AddAllocNode(hGraph, *phGraphNode, nodeParams->poolProps.location.id, nodeParams->bytesize,
                         nodeParams->dptr);
  }
  return rc;
}

CUresult cuGraphAddMemFreeNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                               size_t numDependencies, CUdeviceptr dptr) {
  const auto real = FGPU_REAL_CUDA(cuGraphAddMemFreeNode);
  if (real == nullptr) return MissingRealCuda();
  const CUresult rc = real(phGraphNode, hGraph, dependencies, numDependencies, dptr);
  if (rc != CUDA_SUCCESS) return rc;
  if (GraphAccounting* graphs = EnforcingGraphs(); graphs != nullptr) graphs->AddFreeNode(hGraph, dptr);
  return rc;
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  const auto real = FGPU_REAL_CUDA(cuGraphDestroy);
  if (real == nullptr) return MissingRealCuda();
  const CUresult rc = real(hGraph);
  if (rc != CUDA_SUCCESS) return rc;
  // Its execs keep their own copy of its bytes.
  if (GraphAccounting* graphs = EnforcingGraphs(); graphs != nullptr) graphs->GraphDestroyed(hGraph);
  return rc;
}

CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
                            size_t bufferSize) {
  const auto real = FGPU_REAL_CUDA(cuGraphInstantiate);
  if (real == nullptr) return MissingRealCuda();
  return Instantiated(phGraphExec, hGraph, false,
                      [&] { return real(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize); });
}

CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
                               size_t bufferSize) {
  const auto real = FGPU_REAL_CUDA(cuGraphInstantiate_v2);
  if (real == nullptr) return MissingRealCuda();
  return Instantiated(phGraphExec, hGraph, false,
                      [&] { return real(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize); });
}

// cuGraphInstantiateWithFlags takes no upload flag (only WithParams uploads).
CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  const auto real = FGPU_REAL_CUDA(cuGraphInstantiateWithFlags);
  if (real == nullptr) return MissingRealCuda();
  return Instantiated(phGraphExec, hGraph, false, [&] { return real(phGraphExec, hGraph, flags); });
}

CUresult cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  const auto real = FGPU_REAL_CUDA(cuGraphInstantiateWithParams);
  if (real == nullptr) return MissingRealCuda();
  return Instantiated(phGraphExec, hGraph, UploadsAtInstantiation(instantiateParams),
                      [&] { return real(phGraphExec, hGraph, instantiateParams); });
}

CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  const auto real = FGPU_REAL_CUDA(cuGraphInstantiateWithParams_ptsz);
  if (real == nullptr) return MissingRealCuda();
  return Instantiated(phGraphExec, hGraph, UploadsAtInstantiation(instantiateParams),
                      [&] { return real(phGraphExec, hGraph, instantiateParams); });
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  const auto real = FGPU_REAL_CUDA(cuGraphLaunch);
  if (real == nullptr) return MissingRealCuda();
  return Launched(hGraphExec, [&] { return real(hGraphExec, hStream); });
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  const auto real = FGPU_REAL_CUDA(cuGraphLaunch_ptsz);
  if (real == nullptr) return MissingRealCuda();
  return Launched(hGraphExec, [&] { return real(hGraphExec, hStream); });
}

CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
  const auto real = FGPU_REAL_CUDA(cuGraphUpload);
  if (real == nullptr) return MissingRealCuda();
  return Launched(hGraphExec, [&] { return real(hGraphExec, hStream); });
}

CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  const auto real = FGPU_REAL_CUDA(cuGraphUpload_ptsz);
  if (real == nullptr) return MissingRealCuda();
  return Launched(hGraphExec, [&] { return real(hGraphExec, hStream); });
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  const auto real = FGPU_REAL_CUDA(cuGraphExecDestroy);
  if (real == nullptr) return MissingRealCuda();
  GraphAccounting* graphs = EnforcingGraphs();
  if (graphs == nullptr) return real(hGraphExec);
  return graphs->ExecDestroy(hGraphExec, [&] { return real(hGraphExec); });
}

CUresult cuDeviceGraphMemTrim(CUdevice device) {
  const auto real = FGPU_REAL_CUDA(cuDeviceGraphMemTrim);
  if (real == nullptr) return MissingRealCuda();
  GraphAccounting* graphs = EnforcingGraphs();
  if (graphs == nullptr) return real(device);
  return graphs->Trim(device, [&] { return real(device); });
}

}  // extern "C"
