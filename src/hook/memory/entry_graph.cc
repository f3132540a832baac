// Exported wrappers: graph memory (instantiation, launch/upload, exec destroy, trim). How a
// graph's allocation nodes were made does not matter: instantiation measures the graph through
// the real driver. The wrappers reserve before the driver where it would take memory (first
// launch/upload) and credit after it gave memory back; GraphAccounting holds the rules
// (docs/hook-memory.md "Graph memory").
#include <new>

#include "hook/compute/compute_gate.h"
#include "hook/interpose/exports.h"
#include "hook/memory/graph_accounting.h"
#include "hook/memory/memory_hook.h"

namespace {

using fgpu::hook::EnforcingMemoryHook;
using fgpu::hook::GraphAccounting;
using fgpu::hook::GraphCalls;
using fgpu::hook::MemoryHook;
using fgpu::hook::MissingRealCuda;

// The process's graph accounting, or null when the hook does not enforce. Built once, never
// destroyed (wrappers may run during exit), like the MemoryHook it charges through.
GraphAccounting* EnforcingGraphs() {
  MemoryHook* hook = EnforcingMemoryHook();
  if (hook == nullptr) return nullptr;
  alignas(GraphCalls) static unsigned char calls_storage[sizeof(GraphCalls)];
  alignas(GraphAccounting) static unsigned char storage[sizeof(GraphAccounting)];
  static auto* const graphs = new (storage)
      GraphAccounting(&hook->accounting(), new (calls_storage) GraphCalls(fgpu::hook::ResolveGraphCalls()));
  return graphs;
}

// The instantiation entry points: the graph is measured, then the real call; the exec inherits
// the graph's bytes.
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
  const auto launch = [&] { return Launched(hGraphExec, [&] { return real(hGraphExec, hStream); }); };
  if (!fgpu::hook::ComputeGateArmed()) return launch();
  // A graph is one launch to the gate, charged its measured duration (compute_gate.h).
  return fgpu::hook::GatedLaunch(hStream, false, fgpu::compute::LaunchKind::kGraph, launch);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  const auto real = FGPU_REAL_CUDA(cuGraphLaunch_ptsz);
  if (real == nullptr) return MissingRealCuda();
  const auto launch = [&] { return Launched(hGraphExec, [&] { return real(hGraphExec, hStream); }); };
  if (!fgpu::hook::ComputeGateArmed()) return launch();
  // A graph is one launch to the gate, charged its measured duration (compute_gate.h).
  return fgpu::hook::GatedLaunch(hStream, true, fgpu::compute::LaunchKind::kGraph, launch);
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
