// CUDA graphs: kernel nodes (added explicitly or by stream capture), memory
// allocation/free nodes, instantiation and launch on the shared timeline.
//
// Graph memory model (as the driver's graph memory pool): an executable graph's
// allocation nodes are charged to the device on its first launch (or upload) and stay
// resident until the executable graph is destroyed, or until cuDeviceGraphMemTrim when
// every allocation is freed inside the graph and its last launch has completed.
#include <sys/mman.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "core/abi/cuda_api.h"
#include "sim/cuda/launch.h"
#include "sim/cuda/runtime.h"

using fgpu::sim::SharedDevices;
using fgpu::sim::cuda::Context;
using fgpu::sim::cuda::Graph;
using fgpu::sim::cuda::GraphExec;
using fgpu::sim::cuda::GraphNode;
using fgpu::sim::cuda::HandleRegistry;
using fgpu::sim::cuda::Kind;
using fgpu::sim::cuda::KernelLaunch;
using fgpu::sim::cuda::Runtime;
using fgpu::sim::cuda::Stream;

namespace {

struct GraphMemoryStats {
  uint64_t used = 0, used_high = 0, reserved = 0, reserved_high = 0;
};

class GraphMemory {
 public:
  static GraphMemory& Get() {
    static auto* memory = new GraphMemory;
    return *memory;
  }
  std::mutex mu;
  std::vector<GraphExec*> execs;                 // live executable graphs
  std::vector<GraphMemoryStats> stats{16};       // per device
};

CUresult Ready() { return Runtime::Get().RequireInit(); }

CUresult LookupGraph(CUgraph handle, Graph** out) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  *out = HandleRegistry::Get().Lookup<Graph>(handle, Kind::kGraph);
  return *out != nullptr ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult CheckDependencies(const CUgraphNode* deps, size_t count) {
  if (count > 0 && deps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    if (!HandleRegistry::Get().Is(deps[i], Kind::kGraphNode)) return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// Nodes run in insertion order, which is a valid topological order because a node's
// dependencies must exist before it is added.
CUgraphNode AddNode(Graph& graph, std::unique_ptr<GraphNode> node) {
  std::lock_guard lock(graph.mu);
  GraphNode* raw = node.get();
  HandleRegistry::Get().Insert(raw, Kind::kGraphNode);
  graph.nodes.push_back(std::move(node));
  return reinterpret_cast<CUgraphNode>(raw);
}

CUresult AddKernel(CUgraphNode* out, CUgraph handle, const CUgraphNode* deps, size_t count, CUfunction func,
                   const unsigned grid[3], const unsigned block[3], unsigned shared, void** params, void** extra) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = nullptr;
  if (CUresult rc = LookupGraph(handle, &graph); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = CheckDependencies(deps, count); rc != CUDA_SUCCESS) return rc;
  auto node = std::make_unique<GraphNode>();
  node->type = GraphNode::Type::kKernel;
  if (CUresult rc = fgpu::sim::cuda::PrepareLaunch(func, grid, block, shared, params, extra, false, &node->kernel);
      rc != CUDA_SUCCESS) {
    return rc;
  }
  Context* ctx = nullptr;
  (void)Runtime::Get().CurrentContext(&ctx);  // PrepareLaunch checked there is one
  node->device = ctx->device;
  *out = AddNode(*graph, std::move(node));
  return CUDA_SUCCESS;
}

void ChargeStats(int device, uint64_t bytes, bool add) {
  GraphMemory& memory = GraphMemory::Get();  // caller holds memory.mu
  GraphMemoryStats& s = memory.stats[static_cast<size_t>(device)];
  if (add) {
    s.used += bytes;
    s.reserved += bytes;
    s.used_high = std::max(s.used_high, s.used);
    s.reserved_high = std::max(s.reserved_high, s.reserved);
  } else {
    s.used -= std::min(s.used, bytes);
    s.reserved -= std::min(s.reserved, bytes);
  }
}

// Makes the executable graph's allocation nodes resident (charged) if they are not.
CUresult MakeResident(GraphExec& exec) {
  std::lock_guard lock(GraphMemory::Get().mu);
  if (exec.memory_resident || exec.resident_bytes == 0) return CUDA_SUCCESS;
  if (!Runtime::Get().Charge(exec.resident_device, exec.resident_bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  exec.memory_resident = true;
  ChargeStats(exec.resident_device, exec.resident_bytes, true);
  return CUDA_SUCCESS;
}

void ReleaseResident(GraphExec& exec) {  // caller holds GraphMemory::mu
  if (!exec.memory_resident) return;
  Runtime::Get().Credit(exec.resident_device, exec.resident_bytes);
  ChargeStats(exec.resident_device, exec.resident_bytes, false);
  exec.memory_resident = false;
}

CUresult Instantiate(CUgraphExec* out, CUgraph handle) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = nullptr;
  if (CUresult rc = LookupGraph(handle, &graph); rc != CUDA_SUCCESS) return rc;
  Context* ctx = nullptr;
  if (CUresult rc = Runtime::Get().CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  auto exec = std::make_unique<GraphExec>();
  exec->ctx = ctx;
  exec->resident_device = ctx->device;
  size_t allocs = 0, frees = 0;
  {
    std::lock_guard lock(graph->mu);
    for (const auto& node : graph->nodes) {
      exec->nodes.push_back(*node);
      if (node->type == GraphNode::Type::kMemAlloc) {
        ++allocs;
        exec->resident_bytes += Runtime::Get().RoundToGranularity(node->device, node->bytes);
        exec->resident_device = node->device;
      } else if (node->type == GraphNode::Type::kMemFree) {
        ++frees;
      }
    }
  }
  exec->frees_all_allocations = allocs == frees;
  HandleRegistry::Get().Insert(exec.get(), Kind::kGraphExec);
  std::lock_guard lock(GraphMemory::Get().mu);
  GraphMemory::Get().execs.push_back(exec.get());
  *out = reinterpret_cast<CUgraphExec>(exec.release());
  return CUDA_SUCCESS;
}

CUresult Launch(CUgraphExec handle, CUstream stream_handle, bool per_thread, bool upload_only) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  auto* exec = HandleRegistry::Get().Lookup<GraphExec>(handle, Kind::kGraphExec);
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Stream* stream = nullptr;
  if (CUresult rc = Runtime::Get().ResolveStream(stream_handle, per_thread, &stream); rc != CUDA_SUCCESS) return rc;
  if (stream->capture.load() != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (CUresult rc = MakeResident(*exec); rc != CUDA_SUCCESS) return rc;
  if (upload_only) return CUDA_SUCCESS;
  for (const GraphNode& node : exec->nodes) {
    if (node.type != GraphNode::Type::kKernel) continue;
    Runtime::Get().EnqueueWork(*stream, fgpu::sim::cuda::KernelDurationNs(node.kernel, stream->ctx->device));
  }
  exec->last_launch_end_ns.store(Runtime::Get().ReadyTime(*stream));
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (phGraph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  auto graph = std::make_unique<Graph>();
  HandleRegistry::Get().Insert(graph.get(), Kind::kGraph);
  *phGraph = reinterpret_cast<CUgraph>(graph.release());
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph hGraph) {
  Graph* graph = nullptr;
  if (CUresult rc = LookupGraph(hGraph, &graph); rc != CUDA_SUCCESS) return rc;
  HandleRegistry::Get().Erase(graph);
  for (const auto& node : graph->nodes) HandleRegistry::Get().Erase(node.get());
  for (auto [base, length] : graph->reserved_ranges) munmap(base, length);
  delete graph;
  return CUDA_SUCCESS;
}

CUresult cuGraphAddKernelNode_v2(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                 size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const unsigned grid[3] = {nodeParams->gridDimX, nodeParams->gridDimY, nodeParams->gridDimZ};
  const unsigned block[3] = {nodeParams->blockDimX, nodeParams->blockDimY, nodeParams->blockDimZ};
  CUfunction func = nodeParams->func != nullptr ? nodeParams->func : reinterpret_cast<CUfunction>(nodeParams->kern);
  return AddKernel(phGraphNode, hGraph, dependencies, numDependencies, func, grid, block, nodeParams->sharedMemBytes,
                   nodeParams->kernelParams, nodeParams->extra);
}

CUresult cuGraphAddKernelNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                              size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1* nodeParams) {
  if (nodeParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const unsigned grid[3] = {nodeParams->gridDimX, nodeParams->gridDimY, nodeParams->gridDimZ};
  const unsigned block[3] = {nodeParams->blockDimX, nodeParams->blockDimY, nodeParams->blockDimZ};
  return AddKernel(phGraphNode, hGraph, dependencies, numDependencies, nodeParams->func, grid, block,
                   nodeParams->sharedMemBytes, nodeParams->kernelParams, nodeParams->extra);
}

CUresult cuGraphAddMemAllocNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                                size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS* nodeParams) {
  if (phGraphNode == nullptr || nodeParams == nullptr || nodeParams->bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = nullptr;
  if (CUresult rc = LookupGraph(hGraph, &graph); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = CheckDependencies(dependencies, numDependencies); rc != CUDA_SUCCESS) return rc;
  const CUmemLocation& location = nodeParams->poolProps.location;
  if (location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = Runtime::Get().CheckDevice(location.id); rc != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  // The address is fixed at node creation, as the driver reserves the virtual range then.
  const uint64_t length = Runtime::Get().RoundToGranularity(location.id, nodeParams->bytesize);
  void* base = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  auto node = std::make_unique<GraphNode>();
  node->type = GraphNode::Type::kMemAlloc;
  node->device = location.id;
  node->bytes = nodeParams->bytesize;
  node->dptr = reinterpret_cast<CUdeviceptr>(base);
  nodeParams->dptr = node->dptr;
  {
    std::lock_guard lock(graph->mu);
    graph->reserved_ranges.emplace_back(base, length);
  }
  *phGraphNode = AddNode(*graph, std::move(node));
  return CUDA_SUCCESS;
}

CUresult cuGraphAddMemFreeNode(CUgraphNode* phGraphNode, CUgraph hGraph, const CUgraphNode* dependencies,
                               size_t numDependencies, CUdeviceptr dptr) {
  if (phGraphNode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = nullptr;
  if (CUresult rc = LookupGraph(hGraph, &graph); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = CheckDependencies(dependencies, numDependencies); rc != CUDA_SUCCESS) return rc;
  bool known = false;
  {
    std::lock_guard lock(graph->mu);
    for (const auto& node : graph->nodes) known |= node->type == GraphNode::Type::kMemAlloc && node->dptr == dptr;
  }
  if (!known) return CUDA_ERROR_INVALID_VALUE;  // only graph allocations of this graph are simulated
  auto node = std::make_unique<GraphNode>();
  node->type = GraphNode::Type::kMemFree;
  node->dptr = dptr;
  *phGraphNode = AddNode(*graph, std::move(node));
  return CUDA_SUCCESS;
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  if (numNodes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Graph* graph = nullptr;
  if (CUresult rc = LookupGraph(hGraph, &graph); rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(graph->mu);
  if (nodes != nullptr) {
    const size_t n = std::min(*numNodes, graph->nodes.size());
    for (size_t i = 0; i < n; ++i) nodes[i] = reinterpret_cast<CUgraphNode>(graph->nodes[i].get());
  }
  *numNodes = graph->nodes.size();
  return CUDA_SUCCESS;
}

CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
                            size_t bufferSize) {
  if (phErrorNode != nullptr) *phErrorNode = nullptr;
  if (logBuffer != nullptr && bufferSize > 0) logBuffer[0] = '\0';
  return Instantiate(phGraphExec, hGraph);
}
CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph, CUgraphNode* phErrorNode, char* logBuffer,
                               size_t bufferSize) {
  return cuGraphInstantiate(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize);
}
CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph, unsigned long long flags) {
  constexpr unsigned long long kKnown = 0xF;  // auto-free, upload, device launch, use node priority
  if ((flags & ~kKnown) != 0) return CUDA_ERROR_INVALID_VALUE;
  return Instantiate(phGraphExec, hGraph);
}
CUresult cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  if (instantiateParams == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = Instantiate(phGraphExec, hGraph);
  instantiateParams->hErrNode_out = nullptr;
  instantiateParams->result_out = rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
  if (rc == CUDA_SUCCESS && (instantiateParams->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) != 0) {
    rc = Launch(*phGraphExec, instantiateParams->hUploadStream, false, /*upload_only=*/true);
  }
  return rc;
}
CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                           CUDA_GRAPH_INSTANTIATE_PARAMS* instantiateParams) {
  return cuGraphInstantiateWithParams(phGraphExec, hGraph, instantiateParams);
}

CUresult cuGraphLaunch(CUgraphExec hGraph, CUstream hStream) { return Launch(hGraph, hStream, false, false); }
CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return Launch(hGraphExec, hStream, true, false);
}
CUresult cuGraphUpload(CUgraphExec hGraph, CUstream hStream) { return Launch(hGraph, hStream, false, true); }
CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return Launch(hGraphExec, hStream, true, true);
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  auto* exec = HandleRegistry::Get().Lookup<GraphExec>(hGraphExec, Kind::kGraphExec);
  if (exec == nullptr) return CUDA_ERROR_INVALID_VALUE;
  HandleRegistry::Get().Erase(exec);
  {
    std::lock_guard lock(GraphMemory::Get().mu);
    ReleaseResident(*exec);
    std::erase(GraphMemory::Get().execs, exec);
  }
  delete exec;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGraphMemTrim(CUdevice device) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = Runtime::Get().CheckDevice(device); rc != CUDA_SUCCESS) return rc;
  const uint64_t now = SharedDevices::NowNs();
  std::lock_guard lock(GraphMemory::Get().mu);
  for (GraphExec* exec : GraphMemory::Get().execs) {
    if (exec->resident_device == device && exec->frees_all_allocations && exec->last_launch_end_ns.load() <= now) {
      ReleaseResident(*exec);
    }
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = Runtime::Get().CheckDevice(device); rc != CUDA_SUCCESS) return rc;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(GraphMemory::Get().mu);
  const GraphMemoryStats& s = GraphMemory::Get().stats[static_cast<size_t>(device)];
  auto* out = static_cast<cuuint64_t*>(value);
  switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: *out = s.used; return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: *out = s.used_high; return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: *out = s.reserved; return CUDA_SUCCESS;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: *out = s.reserved_high; return CUDA_SUCCESS;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void* value) {
  if (CUresult rc = Ready(); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = Runtime::Get().CheckDevice(device); rc != CUDA_SUCCESS) return rc;
  if (value == nullptr || *static_cast<cuuint64_t*>(value) != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(GraphMemory::Get().mu);
  GraphMemoryStats& s = GraphMemory::Get().stats[static_cast<size_t>(device)];
  if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) {
    s.used_high = s.used;
  } else if (attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) {
    s.reserved_high = s.reserved;
  } else {
    return CUDA_ERROR_INVALID_VALUE;  // only the high-water marks can be reset
  }
  return CUDA_SUCCESS;
}

}  // extern "C"
